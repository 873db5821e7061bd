CREATE TABLE `features` (
	`id` text PRIMARY KEY NOT NULL,
	`name` text NOT NULL,
	`lookup_key` text NOT NULL,
	`type` text NOT NULL,
	`unit` text,
	`description` text,
	`status` text DEFAULT 'ACTIVE' NOT NULL,
	`metadata` text DEFAULT '{}' NOT NULL,
	`created_at` text DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ', 'now')) NOT NULL,
	`updated_at` text DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ', 'now')) NOT NULL
);
--> statement-breakpoint
CREATE UNIQUE INDEX `features_lookup_key_unique` ON `features` (`lookup_key`);--> statement-breakpoint
CREATE TABLE `plan_entitlements` (
	`id` text PRIMARY KEY NOT NULL,
	`plan_id` text NOT NULL,
	`feature_id` text NOT NULL,
	`value` integer,
	`limit` integer,
	`limit_behavior` text,
	`overage_price` integer,
	`included_amount` integer,
	`reset_period` text,
	`created_at` text DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ', 'now')) NOT NULL,
	`updated_at` text DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ', 'now')) NOT NULL,
	FOREIGN KEY (`plan_id`) REFERENCES `plans`(`id`) ON UPDATE no action ON DELETE cascade,
	FOREIGN KEY (`feature_id`) REFERENCES `features`(`id`) ON UPDATE no action ON DELETE restrict
);
--> statement-breakpoint
CREATE UNIQUE INDEX `plan_entitlements_plan_feature_unique` ON `plan_entitlements` (`plan_id`,`feature_id`);--> statement-breakpoint
CREATE INDEX `plan_entitlements_feature_idx` ON `plan_entitlements` (`feature_id`);--> statement-breakpoint
CREATE TABLE `plan_prices` (
	`id` text PRIMARY KEY NOT NULL,
	`plan_id` text NOT NULL,
	`interval` text NOT NULL,
	`amount` integer NOT NULL,
	`currency` text DEFAULT 'usd' NOT NULL,
	`is_active` integer DEFAULT true NOT NULL,
	`created_at` text DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ', 'now')) NOT NULL,
	`updated_at` text DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ', 'now')) NOT NULL,
	FOREIGN KEY (`plan_id`) REFERENCES `plans`(`id`) ON UPDATE no action ON DELETE cascade,
	CONSTRAINT "plan_prices_amount_non_negative" CHECK(amount >= 0)
);
--> statement-breakpoint
CREATE UNIQUE INDEX `plan_prices_active_unique` ON `plan_prices` (`plan_id`,`interval`,`currency`) WHERE is_active = 1;--> statement-breakpoint
CREATE INDEX `plan_prices_plan_idx` ON `plan_prices` (`plan_id`);--> statement-breakpoint
CREATE TABLE `plans` (
	`id` text PRIMARY KEY NOT NULL,
	`name` text NOT NULL,
	`slug` text NOT NULL,
	`description` text,
	`status` text DEFAULT 'ACTIVE' NOT NULL,
	`is_public` integer DEFAULT true NOT NULL,
	`display_order` integer DEFAULT 0 NOT NULL,
	`metadata` text DEFAULT '{}' NOT NULL,
	`created_at` text DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ', 'now')) NOT NULL,
	`updated_at` text DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ', 'now')) NOT NULL
);
--> statement-breakpoint
CREATE UNIQUE INDEX `plans_slug_unique` ON `plans` (`slug`);--> statement-breakpoint
CREATE INDEX `plans_status_order_idx` ON `plans` (`status`,`display_order`);--> statement-breakpoint
CREATE TABLE `entitlement_snapshots` (
	`id` text PRIMARY KEY NOT NULL,
	`subscription_id` text NOT NULL,
	`feature_lookup_key` text NOT NULL,
	`feature_type` text NOT NULL,
	`value` integer,
	`limit` integer,
	`limit_behavior` text,
	`overage_price` integer,
	`included_amount` integer,
	`reset_period` text,
	`created_at` text DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ', 'now')) NOT NULL,
	FOREIGN KEY (`subscription_id`) REFERENCES `subscriptions`(`id`) ON UPDATE no action ON DELETE cascade
);
--> statement-breakpoint
CREATE UNIQUE INDEX `entitlement_snapshots_subscription_feature_unique` ON `entitlement_snapshots` (`subscription_id`,`feature_lookup_key`);--> statement-breakpoint
CREATE INDEX `entitlement_snapshots_feature_idx` ON `entitlement_snapshots` (`feature_lookup_key`);--> statement-breakpoint
CREATE TABLE `subscriptions` (
	`id` text PRIMARY KEY NOT NULL,
	`tenant_id` text NOT NULL,
	`plan_id` text NOT NULL,
	`price_id` text NOT NULL,
	`status` text DEFAULT 'ACTIVE' NOT NULL,
	`started_at` text NOT NULL,
	`current_period_start` text NOT NULL,
	`current_period_end` text NOT NULL,
	`billing_anchor` integer NOT NULL,
	`trial_ends_at` text,
	`cancel_at_period_end` integer DEFAULT false NOT NULL,
	`cancelled_at` text,
	`ended_at` text,
	`paused_at` text,
	`created_at` text DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ', 'now')) NOT NULL,
	`updated_at` text DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ', 'now')) NOT NULL,
	FOREIGN KEY (`tenant_id`) REFERENCES `tenants`(`id`) ON UPDATE no action ON DELETE cascade,
	FOREIGN KEY (`plan_id`) REFERENCES `plans`(`id`) ON UPDATE no action ON DELETE restrict,
	FOREIGN KEY (`price_id`) REFERENCES `plan_prices`(`id`) ON UPDATE no action ON DELETE restrict,
	CONSTRAINT "subscriptions_billing_anchor_range" CHECK(billing_anchor BETWEEN 1 AND 28)
);
--> statement-breakpoint
CREATE UNIQUE INDEX `subscriptions_one_current_per_tenant` ON `subscriptions` (`tenant_id`) WHERE status IN ('ACTIVE', 'TRIALING', 'PAST_DUE', 'PAUSED');--> statement-breakpoint
CREATE INDEX `subscriptions_tenant_created_idx` ON `subscriptions` (`tenant_id`,`created_at`);--> statement-breakpoint
CREATE INDEX `subscriptions_plan_idx` ON `subscriptions` (`plan_id`);--> statement-breakpoint
CREATE INDEX `subscriptions_status_trial_idx` ON `subscriptions` (`status`,`trial_ends_at`);--> statement-breakpoint
CREATE INDEX `subscriptions_status_period_end_idx` ON `subscriptions` (`status`,`current_period_end`);--> statement-breakpoint
CREATE TABLE `usage_aggregates` (
	`id` text PRIMARY KEY NOT NULL,
	`tenant_id` text NOT NULL,
	`subscription_id` text NOT NULL,
	`feature_lookup_key` text NOT NULL,
	`period_key` text NOT NULL,
	`period_start` text NOT NULL,
	`period_end` text,
	`amount` integer DEFAULT 0 NOT NULL,
	`last_event_at` text,
	`created_at` text DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ', 'now')) NOT NULL,
	`updated_at` text DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ', 'now')) NOT NULL,
	FOREIGN KEY (`tenant_id`) REFERENCES `tenants`(`id`) ON UPDATE no action ON DELETE cascade,
	FOREIGN KEY (`subscription_id`) REFERENCES `subscriptions`(`id`) ON UPDATE no action ON DELETE cascade,
	CONSTRAINT "usage_aggregates_amount_non_negative" CHECK(amount >= 0)
);
--> statement-breakpoint
CREATE UNIQUE INDEX `usage_aggregates_window_unique` ON `usage_aggregates` (`subscription_id`,`feature_lookup_key`,`period_key`);--> statement-breakpoint
CREATE INDEX `usage_aggregates_tenant_feature_idx` ON `usage_aggregates` (`tenant_id`,`feature_lookup_key`);--> statement-breakpoint
CREATE TABLE `usage_flushes` (
	`id` text PRIMARY KEY NOT NULL,
	`tenant_id` text NOT NULL,
	`units` integer NOT NULL,
	`deltas` text NOT NULL,
	`applied_at` text DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ', 'now')) NOT NULL,
	FOREIGN KEY (`tenant_id`) REFERENCES `tenants`(`id`) ON UPDATE no action ON DELETE cascade
);
--> statement-breakpoint
CREATE INDEX `usage_flushes_tenant_applied_idx` ON `usage_flushes` (`tenant_id`,`applied_at`);