-- Credit notes: corrections to a finalized invoice. Each credits some of the
-- invoice's lines (before tax), with tax in proportion, and is settled by
-- lowering what is due (REDUCE), money back through the provider (REFUND) or
-- the tenant's credit balance (CREDIT). Amounts never change once written;
-- only a REFUND note's refund status moves (PENDING -> SUCCEEDED | FAILED).
ALTER TABLE `invoices` ADD `credited_total` integer DEFAULT 0 NOT NULL;--> statement-breakpoint
ALTER TABLE `invoices` ADD `reduced_total` integer DEFAULT 0 NOT NULL;--> statement-breakpoint
CREATE TABLE `credit_notes` (
	`id` text PRIMARY KEY NOT NULL,
	`tenant_id` text NOT NULL REFERENCES `tenants`(`id`) ON DELETE restrict,
	`invoice_id` text NOT NULL REFERENCES `invoices`(`id`) ON DELETE restrict,
	`credit_note_number` text NOT NULL,
	`reason` text NOT NULL,
	`settlement` text NOT NULL,
	`currency` text NOT NULL,
	`subtotal` integer NOT NULL,
	`tax` integer NOT NULL,
	`total` integer NOT NULL,
	`memo` text,
	`refund_status` text,
	`refund_reference` text,
	`refund_failure_reason` text,
	`created_at` text NOT NULL,
	`updated_at` text NOT NULL,
	CONSTRAINT `credit_notes_amounts` CHECK(subtotal > 0 AND tax >= 0 AND total = subtotal + tax)
);--> statement-breakpoint
CREATE UNIQUE INDEX `credit_notes_number_unique` ON `credit_notes` (`credit_note_number`);--> statement-breakpoint
CREATE INDEX `credit_notes_tenant_created_idx` ON `credit_notes` (`tenant_id`, `created_at`);--> statement-breakpoint
CREATE INDEX `credit_notes_invoice_idx` ON `credit_notes` (`invoice_id`);--> statement-breakpoint
CREATE INDEX `credit_notes_refund_reference_idx` ON `credit_notes` (`refund_reference`) WHERE refund_reference IS NOT NULL;--> statement-breakpoint
CREATE TABLE `credit_note_lines` (
	`id` text PRIMARY KEY NOT NULL,
	`credit_note_id` text NOT NULL REFERENCES `credit_notes`(`id`) ON DELETE restrict,
	`invoice_line_item_id` text NOT NULL REFERENCES `invoice_line_items`(`id`) ON DELETE restrict,
	`description` text NOT NULL,
	`amount` integer NOT NULL,
	`sort_order` integer NOT NULL,
	CONSTRAINT `credit_note_lines_positive` CHECK(amount > 0)
);--> statement-breakpoint
CREATE INDEX `credit_note_lines_note_idx` ON `credit_note_lines` (`credit_note_id`, `sort_order`);--> statement-breakpoint
CREATE INDEX `credit_note_lines_line_idx` ON `credit_note_lines` (`invoice_line_item_id`);--> statement-breakpoint
CREATE TABLE `credit_note_sequences` (
	`year` integer PRIMARY KEY NOT NULL,
	`last_value` integer DEFAULT 0 NOT NULL
);--> statement-breakpoint
CREATE TRIGGER `credit_notes_amounts_immutable`
BEFORE UPDATE OF `tenant_id`, `invoice_id`, `credit_note_number`, `reason`, `settlement`, `currency`, `subtotal`, `tax`, `total`, `created_at` ON `credit_notes`
BEGIN
	SELECT RAISE(ABORT, 'credit notes are immutable');
END;
--> statement-breakpoint
CREATE TRIGGER `credit_notes_no_delete` BEFORE DELETE ON `credit_notes`
BEGIN
	SELECT RAISE(ABORT, 'credit notes are immutable');
END;
--> statement-breakpoint
CREATE TRIGGER `credit_note_lines_no_update` BEFORE UPDATE ON `credit_note_lines`
BEGIN
	SELECT RAISE(ABORT, 'credit notes are immutable');
END;
--> statement-breakpoint
CREATE TRIGGER `credit_note_lines_no_delete` BEFORE DELETE ON `credit_note_lines`
BEGIN
	SELECT RAISE(ABORT, 'credit notes are immutable');
END;
