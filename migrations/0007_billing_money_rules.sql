CREATE TABLE `payment_customers` (
	`tenant_id` text NOT NULL,
	`provider` text NOT NULL,
	`provider_customer_id` text NOT NULL,
	`created_at` text DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ', 'now')) NOT NULL,
	PRIMARY KEY(`tenant_id`, `provider`),
	FOREIGN KEY (`tenant_id`) REFERENCES `tenants`(`id`) ON UPDATE no action ON DELETE cascade
);
--> statement-breakpoint
CREATE TABLE `tenant_trials` (
	`tenant_id` text PRIMARY KEY NOT NULL,
	`subscription_id` text NOT NULL,
	`started_at` text NOT NULL,
	FOREIGN KEY (`tenant_id`) REFERENCES `tenants`(`id`) ON UPDATE no action ON DELETE cascade,
	FOREIGN KEY (`subscription_id`) REFERENCES `subscriptions`(`id`) ON UPDATE no action ON DELETE cascade
);
--> statement-breakpoint
DROP INDEX `invoices_subscription_period_kind_unique`;--> statement-breakpoint
CREATE UNIQUE INDEX `invoices_subscription_period_kind_live_unique` ON `invoices` (`subscription_id`,`period_start`,`kind`) WHERE status <> 'VOID';--> statement-breakpoint
DROP INDEX `ledger_entries_invoice_type_once`;--> statement-breakpoint
CREATE UNIQUE INDEX `ledger_entries_invoice_type_once_v2` ON `ledger_entries` (`invoice_id`,`type`) WHERE type IN ('CHARGE', 'PAYMENT', 'ADJUSTMENT') OR (type = 'CREDIT' AND external_reference IS NULL);--> statement-breakpoint
CREATE UNIQUE INDEX `ledger_entries_received_credit_unique` ON `ledger_entries` (`external_reference`) WHERE type = 'CREDIT' AND external_reference IS NOT NULL;--> statement-breakpoint
-- A column CHECK rather than drizzle's table rebuild: plan_prices is referenced by subscriptions, and D1 cannot switch foreign keys off.
ALTER TABLE `plan_prices` ADD `trial_days` integer CONSTRAINT "plan_prices_trial_days_range" CHECK(trial_days IS NULL OR trial_days BETWEEN 0 AND 365);--> statement-breakpoint
-- A tenant that already had trials keeps its first one on record: it gets no other.
INSERT OR IGNORE INTO `tenant_trials` (`tenant_id`, `subscription_id`, `started_at`)
SELECT `tenant_id`, `id`, `started_at` FROM `subscriptions` WHERE `trial_ends_at` IS NOT NULL ORDER BY `created_at`, `id`;