import type { Database } from "@edge-platform/shared/db/client";
import { couponRedemptions, coupons } from "@edge-platform/shared/db/schema/billing";
import { and, desc, eq, gt, isNull, lt, or, sql } from "drizzle-orm";

export type CouponRow = typeof coupons.$inferSelect;
export type CouponRedemptionRow = typeof couponRedemptions.$inferSelect;

export function insertCoupon(db: Database, values: typeof coupons.$inferInsert) {
  return db.insert(coupons).values(values).returning();
}

export function listCoupons(db: Database) {
  return db.select().from(coupons).orderBy(desc(coupons.createdAt), desc(coupons.id)).all();
}

export function findCouponById(db: Database, id: string) {
  return db.select().from(coupons).where(eq(coupons.id, id)).get();
}

export function findCouponByCode(db: Database, code: string) {
  return db.select().from(coupons).where(eq(coupons.code, code)).get();
}

export function archiveCouponStatement(db: Database, id: string, now: string) {
  return db
    .update(coupons)
    .set({ status: "ARCHIVED", updatedAt: now })
    .where(and(eq(coupons.id, id), eq(coupons.status, "ACTIVE")))
    .returning();
}

export function findActiveRedemption(db: Database, tenantId: string) {
  return db
    .select({ redemption: couponRedemptions, code: coupons.code })
    .from(couponRedemptions)
    .innerJoin(coupons, eq(coupons.id, couponRedemptions.couponId))
    .where(and(eq(couponRedemptions.tenantId, tenantId), isNull(couponRedemptions.endedAt)))
    .get();
}

/** Whether the tenant has ever redeemed the coupon, ended redemptions included. */
export async function hasRedeemed(db: Database, couponId: string, tenantId: string) {
  const found = await db
    .select({ id: couponRedemptions.id })
    .from(couponRedemptions)
    .where(and(eq(couponRedemptions.couponId, couponId), eq(couponRedemptions.tenantId, tenantId)))
    .get();
  return found !== undefined;
}

/** The marker of a redemption refused inside its batch (see redeemStatements). */
export const REDEMPTION_REFUSED = /NOT NULL constraint failed: coupon_redemptions\.coupon_id/;

/**
 * Redeeming as part of a batch: the coupon's count moves only while it is
 * ACTIVE, before `redeemBy`, under `maxRedemptions` and, unless it is
 * reusable, while the tenant has no redemption of it, ended or not (one
 * conditional UPDATE: a batch runs alone, so concurrent redemptions can
 * neither overshoot the limit nor both pass the once-per-tenant check), and the
 * redemption row is inserted only if that UPDATE changed the coupon: its
 * coupon id is NULL otherwise, which fails the NOT NULL constraint and
 * with it the whole batch (REDEMPTION_REFUSED), so nothing the batch would
 * have written, a subscription included, is left behind. The partial
 * unique index allows one active redemption per tenant.
 */
export function redeemStatements(
  db: Database,
  couponId: string,
  redemption: { id: string; tenantId: string; subscriptionId: string },
  now: string,
) {
  return [
    db
      .update(coupons)
      .set({ timesRedeemed: sql`${coupons.timesRedeemed} + 1`, updatedAt: now })
      .where(
        and(
          eq(coupons.id, couponId),
          eq(coupons.status, "ACTIVE"),
          or(isNull(coupons.maxRedemptions), lt(coupons.timesRedeemed, coupons.maxRedemptions)),
          or(isNull(coupons.redeemBy), gt(coupons.redeemBy, now)),
          or(
            eq(coupons.reusable, true),
            sql`NOT EXISTS (SELECT 1 FROM coupon_redemptions r
                            WHERE r.coupon_id = ${couponId} AND r.tenant_id = ${redemption.tenantId})`,
          ),
        ),
      ),
    db
      .insert(couponRedemptions)
      .values({
        id: redemption.id,
        couponId: sql`(SELECT ${couponId} WHERE changes() = 1)`,
        tenantId: redemption.tenantId,
        subscriptionId: redemption.subscriptionId,
        redeemedAt: now,
      })
      .returning(),
  ] as const;
}
