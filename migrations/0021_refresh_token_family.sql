-- Refresh tokens belong to a session (family): the sign-in that issued the
-- first one and every token rotated from it. A spent token presented after
-- the grace period ends its own family, not every session of the user.
-- Tokens issued before each start a family of their own.
ALTER TABLE `refresh_tokens` ADD `family_id` text;--> statement-breakpoint
UPDATE `refresh_tokens` SET `family_id` = `id` WHERE `family_id` IS NULL;--> statement-breakpoint
CREATE INDEX `refresh_tokens_family_idx` ON `refresh_tokens` (`family_id`);
