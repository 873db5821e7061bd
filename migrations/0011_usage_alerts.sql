CREATE TABLE `usage_alerts` (
	`id` text PRIMARY KEY NOT NULL,
	`tenant_id` text NOT NULL,
	`feature_lookup_key` text NOT NULL,
	`threshold_type` text NOT NULL,
	`threshold_value` integer NOT NULL,
	`created_at` text DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ', 'now')) NOT NULL,
	FOREIGN KEY (`tenant_id`) REFERENCES `tenants`(`id`) ON UPDATE no action ON DELETE cascade,
	CONSTRAINT "usage_alerts_threshold_positive" CHECK(threshold_value > 0)
);
--> statement-breakpoint
CREATE UNIQUE INDEX `usage_alerts_tenant_threshold_unique` ON `usage_alerts` (`tenant_id`,`feature_lookup_key`,`threshold_type`,`threshold_value`);--> statement-breakpoint
CREATE INDEX `usage_alerts_tenant_created_idx` ON `usage_alerts` (`tenant_id`,`created_at`);