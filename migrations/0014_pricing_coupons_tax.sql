CREATE TABLE `coupon_redemptions` (
	`id` text PRIMARY KEY NOT NULL,
	`coupon_id` text NOT NULL,
	`tenant_id` text NOT NULL,
	`subscription_id` text NOT NULL,
	`invoices_discounted` integer DEFAULT 0 NOT NULL,
	`redeemed_at` text NOT NULL,
	`ended_at` text,
	FOREIGN KEY (`coupon_id`) REFERENCES `coupons`(`id`) ON UPDATE no action ON DELETE restrict,
	FOREIGN KEY (`tenant_id`) REFERENCES `tenants`(`id`) ON UPDATE no action ON DELETE cascade,
	FOREIGN KEY (`subscription_id`) REFERENCES `subscriptions`(`id`) ON UPDATE no action ON DELETE cascade
);
--> statement-breakpoint
CREATE UNIQUE INDEX `coupon_redemptions_one_active_per_tenant` ON `coupon_redemptions` (`tenant_id`) WHERE ended_at IS NULL;--> statement-breakpoint
CREATE INDEX `coupon_redemptions_coupon_idx` ON `coupon_redemptions` (`coupon_id`);--> statement-breakpoint
CREATE TABLE `coupons` (
	`id` text PRIMARY KEY NOT NULL,
	`code` text NOT NULL,
	`label` text NOT NULL,
	`percent_off` integer,
	`amount_off` integer,
	`currency` text,
	`duration` text NOT NULL,
	`duration_in_periods` integer,
	`max_redemptions` integer,
	`redeem_by` text,
	`times_redeemed` integer DEFAULT 0 NOT NULL,
	`status` text DEFAULT 'ACTIVE' NOT NULL,
	`created_at` text DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ', 'now')) NOT NULL,
	`updated_at` text DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ', 'now')) NOT NULL,
	CONSTRAINT "coupons_one_discount" CHECK((percent_off BETWEEN 1 AND 100 AND amount_off IS NULL AND currency IS NULL)
        OR (percent_off IS NULL AND amount_off > 0 AND currency IS NOT NULL)),
	CONSTRAINT "coupons_redemptions_within_max" CHECK(max_redemptions IS NULL OR times_redeemed <= max_redemptions)
);
--> statement-breakpoint
CREATE UNIQUE INDEX `coupons_code_unique` ON `coupons` (`code`);--> statement-breakpoint
CREATE TABLE `tenant_billing_details` (
	`tenant_id` text PRIMARY KEY NOT NULL,
	`tax_rate_ppm` integer DEFAULT 0 NOT NULL,
	`tax_id` text,
	`legal_name` text NOT NULL,
	`address` text NOT NULL,
	`created_at` text DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ', 'now')) NOT NULL,
	`updated_at` text DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ', 'now')) NOT NULL,
	FOREIGN KEY (`tenant_id`) REFERENCES `tenants`(`id`) ON UPDATE no action ON DELETE cascade,
	CONSTRAINT "tenant_billing_details_tax_rate_range" CHECK(tax_rate_ppm BETWEEN 0 AND 1000000)
);
--> statement-breakpoint
ALTER TABLE `invoice_line_items` ADD `pricing` text;--> statement-breakpoint
ALTER TABLE `invoices` ADD `discount` integer DEFAULT 0 NOT NULL;--> statement-breakpoint
ALTER TABLE `invoices` ADD `coupon_redemption_id` text;--> statement-breakpoint
ALTER TABLE `invoices` ADD `tax` integer DEFAULT 0 NOT NULL;--> statement-breakpoint
ALTER TABLE `invoices` ADD `tax_rate_ppm` integer;--> statement-breakpoint
ALTER TABLE `plan_entitlements` ADD `pricing` text;--> statement-breakpoint
ALTER TABLE `entitlement_snapshots` ADD `pricing` text;