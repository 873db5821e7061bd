CREATE TABLE `invoice_line_items` (
	`id` text PRIMARY KEY NOT NULL,
	`invoice_id` text NOT NULL,
	`kind` text NOT NULL,
	`description` text NOT NULL,
	`feature_lookup_key` text,
	`usage_window_key` text,
	`quantity` integer NOT NULL,
	`unit_price_micro_cents` integer NOT NULL,
	`amount` integer NOT NULL,
	`sort_order` integer DEFAULT 0 NOT NULL,
	`created_at` text DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ', 'now')) NOT NULL,
	FOREIGN KEY (`invoice_id`) REFERENCES `invoices`(`id`) ON UPDATE no action ON DELETE cascade
);
--> statement-breakpoint
CREATE INDEX `invoice_line_items_invoice_idx` ON `invoice_line_items` (`invoice_id`,`sort_order`);--> statement-breakpoint
CREATE INDEX `invoice_line_items_usage_idx` ON `invoice_line_items` (`feature_lookup_key`,`usage_window_key`);--> statement-breakpoint
CREATE TABLE `invoice_sequences` (
	`year` integer PRIMARY KEY NOT NULL,
	`last_value` integer DEFAULT 0 NOT NULL
);
--> statement-breakpoint
CREATE TABLE `invoices` (
	`id` text PRIMARY KEY NOT NULL,
	`tenant_id` text NOT NULL,
	`subscription_id` text NOT NULL,
	`kind` text NOT NULL,
	`invoice_number` text,
	`status` text DEFAULT 'DRAFT' NOT NULL,
	`currency` text NOT NULL,
	`subtotal` integer DEFAULT 0 NOT NULL,
	`total` integer DEFAULT 0 NOT NULL,
	`period_start` text NOT NULL,
	`period_end` text NOT NULL,
	`due_date` text,
	`finalized_at` text,
	`paid_at` text,
	`voided_at` text,
	`uncollectible_at` text,
	`dunning_exhausted_at` text,
	`notes` text,
	`created_at` text DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ', 'now')) NOT NULL,
	`updated_at` text DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ', 'now')) NOT NULL,
	FOREIGN KEY (`tenant_id`) REFERENCES `tenants`(`id`) ON UPDATE no action ON DELETE restrict,
	FOREIGN KEY (`subscription_id`) REFERENCES `subscriptions`(`id`) ON UPDATE no action ON DELETE restrict,
	CONSTRAINT "invoices_total_non_negative" CHECK(total >= 0 AND subtotal >= 0)
);
--> statement-breakpoint
CREATE UNIQUE INDEX `invoices_number_unique` ON `invoices` (`invoice_number`);--> statement-breakpoint
CREATE UNIQUE INDEX `invoices_subscription_period_kind_unique` ON `invoices` (`subscription_id`,`period_start`,`kind`);--> statement-breakpoint
CREATE INDEX `invoices_tenant_created_idx` ON `invoices` (`tenant_id`,`created_at`);--> statement-breakpoint
CREATE INDEX `invoices_status_idx` ON `invoices` (`status`);--> statement-breakpoint
CREATE TABLE `ledger_entries` (
	`id` text PRIMARY KEY NOT NULL,
	`tenant_id` text NOT NULL,
	`invoice_id` text,
	`type` text NOT NULL,
	`description` text NOT NULL,
	`debit` integer DEFAULT 0 NOT NULL,
	`credit` integer DEFAULT 0 NOT NULL,
	`currency` text NOT NULL,
	`external_reference` text,
	`created_at` text DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ', 'now')) NOT NULL,
	FOREIGN KEY (`tenant_id`) REFERENCES `tenants`(`id`) ON UPDATE no action ON DELETE restrict,
	FOREIGN KEY (`invoice_id`) REFERENCES `invoices`(`id`) ON UPDATE no action ON DELETE restrict,
	CONSTRAINT "ledger_entries_one_sided" CHECK(debit >= 0 AND credit >= 0 AND (debit = 0 OR credit = 0))
);
--> statement-breakpoint
CREATE UNIQUE INDEX `ledger_entries_invoice_type_once` ON `ledger_entries` (`invoice_id`,`type`) WHERE type IN ('CHARGE', 'PAYMENT', 'CREDIT');--> statement-breakpoint
CREATE UNIQUE INDEX `ledger_entries_refund_reference_unique` ON `ledger_entries` (`external_reference`) WHERE type = 'REFUND';--> statement-breakpoint
CREATE INDEX `ledger_entries_tenant_currency_idx` ON `ledger_entries` (`tenant_id`,`currency`,`created_at`);--> statement-breakpoint
CREATE INDEX `ledger_entries_tenant_type_idx` ON `ledger_entries` (`tenant_id`,`type`);--> statement-breakpoint
CREATE TABLE `payment_attempts` (
	`id` text PRIMARY KEY NOT NULL,
	`invoice_id` text NOT NULL,
	`tenant_id` text NOT NULL,
	`provider` text NOT NULL,
	`provider_payment_id` text,
	`status` text DEFAULT 'PENDING' NOT NULL,
	`amount` integer NOT NULL,
	`currency` text NOT NULL,
	`failure_reason` text,
	`provider_response` text,
	`attempt_number` integer NOT NULL,
	`retry_of` text,
	`next_retry_at` text,
	`created_at` text DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ', 'now')) NOT NULL,
	`updated_at` text DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ', 'now')) NOT NULL,
	FOREIGN KEY (`invoice_id`) REFERENCES `invoices`(`id`) ON UPDATE no action ON DELETE restrict,
	FOREIGN KEY (`tenant_id`) REFERENCES `tenants`(`id`) ON UPDATE no action ON DELETE restrict
);
--> statement-breakpoint
CREATE UNIQUE INDEX `payment_attempts_provider_id_unique` ON `payment_attempts` (`provider_payment_id`);--> statement-breakpoint
CREATE UNIQUE INDEX `payment_attempts_invoice_attempt_unique` ON `payment_attempts` (`invoice_id`,`attempt_number`);--> statement-breakpoint
CREATE INDEX `payment_attempts_tenant_created_idx` ON `payment_attempts` (`tenant_id`,`created_at`);--> statement-breakpoint
CREATE INDEX `payment_attempts_status_retry_idx` ON `payment_attempts` (`status`,`next_retry_at`);--> statement-breakpoint
CREATE TABLE `webhook_events` (
	`id` text PRIMARY KEY NOT NULL,
	`provider` text NOT NULL,
	`provider_event_id` text NOT NULL,
	`event_type` text NOT NULL,
	`status` text DEFAULT 'PENDING' NOT NULL,
	`raw_payload` text NOT NULL,
	`attempts` integer DEFAULT 0 NOT NULL,
	`outcome` text,
	`processing_error` text,
	`processed_at` text,
	`created_at` text DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ', 'now')) NOT NULL,
	`updated_at` text DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ', 'now')) NOT NULL
);
--> statement-breakpoint
CREATE UNIQUE INDEX `webhook_events_provider_event_unique` ON `webhook_events` (`provider`,`provider_event_id`);--> statement-breakpoint
CREATE INDEX `webhook_events_status_idx` ON `webhook_events` (`status`,`created_at`);