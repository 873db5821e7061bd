CREATE TABLE `usage_archive_parts` (
	`key` text PRIMARY KEY NOT NULL,
	`tenant_id` text NOT NULL,
	`day` text NOT NULL,
	`part` integer NOT NULL,
	`event_count` integer NOT NULL,
	`first_id` text NOT NULL,
	`last_id` text NOT NULL,
	`bytes` integer NOT NULL,
	`status` text DEFAULT 'UPLOADED' NOT NULL,
	`created_at` text DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ', 'now')) NOT NULL,
	`deleted_at` text
);
--> statement-breakpoint
CREATE UNIQUE INDEX `usage_archive_parts_tenant_day_part_unique` ON `usage_archive_parts` (`tenant_id`,`day`,`part`);--> statement-breakpoint
CREATE INDEX `usage_archive_parts_status_idx` ON `usage_archive_parts` (`status`);--> statement-breakpoint
CREATE INDEX `usage_events_received_idx` ON `usage_events` (`received_at`);--> statement-breakpoint
CREATE INDEX `usage_events_unfinished_idx` ON `usage_events` (`updated_at`) WHERE status IN ('PENDING', 'VALIDATED');