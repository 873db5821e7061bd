-- A coupon is redeemable once per tenant, ever, unless it was created
-- reusable: then a tenant may redeem it again once its earlier redemption
-- has ended. Coupons created before keep the stricter rule.
ALTER TABLE `coupons` ADD `reusable` integer DEFAULT 0 NOT NULL;--> statement-breakpoint
CREATE INDEX `coupon_redemptions_coupon_tenant_idx` ON `coupon_redemptions` (`coupon_id`,`tenant_id`);
