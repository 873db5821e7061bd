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
ALTER TABLE `invoices` ADD `tax` integer DEFAULT 0 NOT NULL;--> statement-breakpoint
ALTER TABLE `invoices` ADD `tax_rate_ppm` integer;--> statement-breakpoint
ALTER TABLE `plan_entitlements` ADD `pricing` text;--> statement-breakpoint
ALTER TABLE `entitlement_snapshots` ADD `pricing` text;