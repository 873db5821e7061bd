-- Usage of metered features per group of property values (a meter's
-- groupBy), per subscription and reset window: the mergeable summary of
-- the group's events (shared/src/billing/meter.ts MeterState). Written
-- only by the EntitlementCounter's flush, in the same D1 batch and under
-- the same flush-id guard as usage_aggregates, so each event is folded in
-- once. `group_key` is '' for a meter without groupBy and '*' for the
-- overflow group beyond the combination bound.
CREATE TABLE `usage_meter_groups` (
	`tenant_id` text NOT NULL,
	`subscription_id` text NOT NULL,
	`feature_lookup_key` text NOT NULL,
	`period_key` text NOT NULL,
	`period_start` text NOT NULL,
	`period_end` text,
	`group_key` text NOT NULL,
	`dimensions` text DEFAULT '{}' NOT NULL,
	`events` integer DEFAULT 0 NOT NULL,
	`value_sum` real DEFAULT 0 NOT NULL,
	`value_min` real,
	`value_max` real,
	`latest_value` real,
	`latest_at` text,
	`latest_id` text,
	`weighted_ms` real DEFAULT 0 NOT NULL,
	`distinct_values` integer DEFAULT 0 NOT NULL,
	`updated_at` text DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ', 'now')) NOT NULL,
	PRIMARY KEY(`subscription_id`, `feature_lookup_key`, `period_key`, `group_key`),
	FOREIGN KEY (`tenant_id`) REFERENCES `tenants`(`id`) ON UPDATE no action ON DELETE cascade,
	FOREIGN KEY (`subscription_id`) REFERENCES `subscriptions`(`id`) ON UPDATE no action ON DELETE cascade
);
--> statement-breakpoint
CREATE INDEX `usage_meter_groups_tenant_feature_idx` ON `usage_meter_groups` (`tenant_id`,`feature_lookup_key`,`period_start`);
--> statement-breakpoint
-- The same summaries per clock hour (UTC) of the events' timestamps: what
-- usage charts split by a dimension read. Folded by the same flush.
CREATE TABLE `usage_meter_hourly` (
	`tenant_id` text NOT NULL,
	`subscription_id` text NOT NULL,
	`feature_lookup_key` text NOT NULL,
	`hour_start` text NOT NULL,
	`group_key` text NOT NULL,
	`dimensions` text DEFAULT '{}' NOT NULL,
	`events` integer DEFAULT 0 NOT NULL,
	`value_sum` real DEFAULT 0 NOT NULL,
	`value_min` real,
	`value_max` real,
	`latest_value` real,
	`latest_at` text,
	`latest_id` text,
	`weighted_ms` real DEFAULT 0 NOT NULL,
	`distinct_values` integer DEFAULT 0 NOT NULL,
	PRIMARY KEY(`subscription_id`, `feature_lookup_key`, `hour_start`, `group_key`),
	FOREIGN KEY (`tenant_id`) REFERENCES `tenants`(`id`) ON UPDATE no action ON DELETE cascade,
	FOREIGN KEY (`subscription_id`) REFERENCES `subscriptions`(`id`) ON UPDATE no action ON DELETE cascade
);
--> statement-breakpoint
CREATE INDEX `usage_meter_hourly_tenant_feature_hour_idx` ON `usage_meter_hourly` (`tenant_id`,`feature_lookup_key`,`hour_start`);
--> statement-breakpoint
-- A USAGE line of a feature with groupBy: the group's values.
ALTER TABLE `invoice_line_items` ADD `dimensions` text;
--> statement-breakpoint
-- A USAGE line priced per unit by a decimal price: that price, in micro-cents.
ALTER TABLE `invoice_line_items` ADD `unit_price_decimal` text;
