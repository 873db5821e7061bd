ALTER TABLE `invoice_line_items` ADD `pricing` text;--> statement-breakpoint
ALTER TABLE `plan_entitlements` ADD `pricing` text;--> statement-breakpoint
ALTER TABLE `entitlement_snapshots` ADD `pricing` text;