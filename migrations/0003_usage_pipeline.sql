CREATE TABLE `usage_events` (
	`id` text PRIMARY KEY NOT NULL,
	`tenant_id` text NOT NULL,
	`event_id` text NOT NULL,
	`subscription_id` text,
	`feature_lookup_key` text NOT NULL,
	`amount` integer NOT NULL,
	`timestamp` text NOT NULL,
	`received_at` text NOT NULL,
	`status` text DEFAULT 'PENDING' NOT NULL,
	`rejection_code` text,
	`rejection_reason` text,
	`period_key` text,
	`period_start` text,
	`period_end` text,
	`validated_at` text,
	`aggregated_at` text,
	`aggregation_flush_id` text,
	`metadata` text DEFAULT '{}' NOT NULL,
	`created_at` text DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ', 'now')) NOT NULL,
	`updated_at` text DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ', 'now')) NOT NULL,
	FOREIGN KEY (`tenant_id`) REFERENCES `tenants`(`id`) ON UPDATE no action ON DELETE cascade,
	FOREIGN KEY (`subscription_id`) REFERENCES `subscriptions`(`id`) ON UPDATE no action ON DELETE set null,
	CONSTRAINT "usage_events_amount_positive" CHECK(amount > 0)
);
--> statement-breakpoint
CREATE UNIQUE INDEX `usage_events_tenant_event_unique` ON `usage_events` (`tenant_id`,`event_id`);--> statement-breakpoint
CREATE INDEX `usage_events_tenant_status_idx` ON `usage_events` (`tenant_id`,`status`);--> statement-breakpoint
CREATE INDEX `usage_events_flush_idx` ON `usage_events` (`aggregation_flush_id`) WHERE aggregation_flush_id IS NOT NULL;--> statement-breakpoint
CREATE TABLE `usage_outbox` (
	`id` text PRIMARY KEY NOT NULL,
	`tenant_id` text NOT NULL,
	`topic` text NOT NULL,
	`status` text DEFAULT 'PENDING' NOT NULL,
	`attempts` integer DEFAULT 0 NOT NULL,
	`next_attempt_at` text NOT NULL,
	`published_at` text,
	`last_error` text,
	`created_at` text DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ', 'now')) NOT NULL,
	FOREIGN KEY (`id`) REFERENCES `usage_events`(`id`) ON UPDATE no action ON DELETE cascade
);
--> statement-breakpoint
CREATE INDEX `usage_outbox_due_idx` ON `usage_outbox` (`next_attempt_at`) WHERE status = 'PENDING';--> statement-breakpoint
CREATE INDEX `usage_outbox_published_idx` ON `usage_outbox` (`published_at`) WHERE status = 'PUBLISHED';