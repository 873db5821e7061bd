-- Prepaid credits: grants of credit a tenant's priced usage draws down, the
-- draws per grant and usage window (what CREDITS invoice lines credit), the
-- ids of the counter's credit flushes (each applied once) and the automatic
-- top-up rule; prices that are prepaid or bill usage progressively.
ALTER TABLE `plan_prices` ADD `prepaid` integer DEFAULT 0 NOT NULL;--> statement-breakpoint
ALTER TABLE `plan_prices` ADD `usage_thresholds` text;--> statement-breakpoint
ALTER TABLE `invoice_line_items` ADD `credit_grant_id` text;--> statement-breakpoint
CREATE TABLE `credit_grants` (
	`id` text PRIMARY KEY NOT NULL,
	`tenant_id` text NOT NULL,
	`amount` integer NOT NULL,
	`drawn` integer DEFAULT 0 NOT NULL,
	`written_off` integer DEFAULT 0 NOT NULL,
	`currency` text NOT NULL,
	`category` text NOT NULL,
	`priority` integer DEFAULT 50 NOT NULL,
	`expires_at` text,
	`features` text,
	`paid_amount` integer,
	`status` text NOT NULL,
	`invoice_id` text,
	`auto_top_up` integer DEFAULT 0 NOT NULL,
	`created_at` text DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ', 'now')) NOT NULL,
	`updated_at` text DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ', 'now')) NOT NULL,
	`ended_at` text,
	FOREIGN KEY (`tenant_id`) REFERENCES `tenants`(`id`) ON UPDATE no action ON DELETE restrict,
	FOREIGN KEY (`invoice_id`) REFERENCES `invoices`(`id`) ON UPDATE no action ON DELETE restrict,
	CONSTRAINT "credit_grants_amount_range" CHECK(amount BETWEEN 1 AND 1000000000),
	CONSTRAINT "credit_grants_drawn_within_amount" CHECK(drawn >= 0 AND written_off >= 0 AND drawn + written_off <= amount),
	CONSTRAINT "credit_grants_priority_range" CHECK(priority BETWEEN 0 AND 100),
	CONSTRAINT "credit_grants_category" CHECK(category IN ('promotional', 'paid')),
	CONSTRAINT "credit_grants_status" CHECK(status IN ('PENDING', 'ACTIVE', 'EXPIRED', 'VOIDED'))
);
--> statement-breakpoint
CREATE INDEX `credit_grants_tenant_idx` ON `credit_grants` (`tenant_id`,`created_at`);--> statement-breakpoint
CREATE INDEX `credit_grants_invoice_idx` ON `credit_grants` (`invoice_id`);--> statement-breakpoint
CREATE INDEX `credit_grants_expiry_idx` ON `credit_grants` (`expires_at`) WHERE status = 'ACTIVE' AND expires_at IS NOT NULL;--> statement-breakpoint
CREATE TABLE `credit_draws` (
	`grant_id` text NOT NULL,
	`tenant_id` text NOT NULL,
	`subscription_id` text NOT NULL,
	`feature_lookup_key` text NOT NULL,
	`period_key` text NOT NULL,
	`period_start` text NOT NULL,
	`amount` integer NOT NULL,
	PRIMARY KEY(`grant_id`, `subscription_id`, `feature_lookup_key`, `period_key`),
	FOREIGN KEY (`grant_id`) REFERENCES `credit_grants`(`id`) ON UPDATE no action ON DELETE restrict
);
--> statement-breakpoint
CREATE INDEX `credit_draws_subscription_idx` ON `credit_draws` (`subscription_id`,`period_start`);--> statement-breakpoint
CREATE TABLE `credit_flushes` (
	`id` text PRIMARY KEY NOT NULL,
	`tenant_id` text NOT NULL,
	`applied_at` text NOT NULL
);;--> statement-breakpoint
CREATE TABLE `credit_auto_top_ups` (
	`tenant_id` text PRIMARY KEY NOT NULL,
	`enabled` integer NOT NULL,
	`threshold` integer NOT NULL,
	`amount` integer NOT NULL,
	`disabled_reason` text,
	`updated_at` text NOT NULL,
	FOREIGN KEY (`tenant_id`) REFERENCES `tenants`(`id`) ON UPDATE no action ON DELETE restrict,
	CONSTRAINT "credit_auto_top_ups_amounts" CHECK(threshold BETWEEN 0 AND 1000000000 AND amount BETWEEN 1 AND 1000000000)
);
