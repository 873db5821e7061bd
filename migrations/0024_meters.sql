-- Meters and finer prices. A feature's `meter` (JSON: aggregation,
-- property, filters, groupBy) says how its usage is measured from event
-- properties; null is the meter every feature had before: SUM of `amount`,
-- no filter, one group. An entitlement may price its units by a decimal
-- string of micro-cents (`overage_price_decimal`, for prices below one
-- micro-cent) and by group (`dimensions`, JSON: a price per combination of
-- the meter's groupBy values). Snapshots copy all three, so a subscriber
-- keeps the meter and prices it subscribed with.
ALTER TABLE `features` ADD `meter` text;--> statement-breakpoint
ALTER TABLE `plan_entitlements` ADD `overage_price_decimal` text;--> statement-breakpoint
ALTER TABLE `plan_entitlements` ADD `dimensions` text;--> statement-breakpoint
ALTER TABLE `entitlement_snapshots` ADD `meter` text;--> statement-breakpoint
ALTER TABLE `entitlement_snapshots` ADD `overage_price_decimal` text;--> statement-breakpoint
ALTER TABLE `entitlement_snapshots` ADD `dimensions` text;
