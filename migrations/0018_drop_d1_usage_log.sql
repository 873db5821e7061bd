-- The second step of moving the usage log out of D1 (see
-- 0015_usage_log_drain.sql): drops the D1 log once the Cron Trigger has
-- moved every row into the tenants' UsageLog objects. While any row is
-- left the CHECK below fails and so does this migration, changing nothing;
-- apply it again once the scheduled run logs no more usage events moved.
-- The archive-part table of the earlier R2 archive goes too (its NDJSON
-- objects stay in R2, readable by any tool).
CREATE TABLE `usage_log_drain_check` (`remaining` integer NOT NULL CHECK (`remaining` = 0));--> statement-breakpoint
INSERT INTO `usage_log_drain_check` (`remaining`)
  SELECT (SELECT count(*) FROM `usage_events`) + (SELECT count(*) FROM `usage_outbox`);--> statement-breakpoint
DROP TABLE `usage_log_drain_check`;--> statement-breakpoint
DROP TABLE `usage_outbox`;--> statement-breakpoint
DROP TABLE `usage_events`;--> statement-breakpoint
DROP TABLE `usage_archive_parts`;
