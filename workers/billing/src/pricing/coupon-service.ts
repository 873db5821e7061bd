import { type Database, nowIso, uniqueViolation } from "@edge-platform/shared/db/client";
import type { CouponDuration } from "@edge-platform/shared/db/schema/billing";
import { ApiError } from "@edge-platform/shared/http/api-error";
import {
  type AuditContext,
  auditEntry,
  fieldChanges,
  ROW_CHANGED,
  SYSTEM_AUDIT,
  statusChange,
} from "../audit/index.ts";
import type { TenantContext } from "../platform/index.ts";
import {
  archiveCouponStatement,
  type CouponRedemptionRow,
  type CouponRow,
  findActiveRedemption,
  findCouponByCode,
  findCouponById,
  hasRedeemed,
  insertCoupon,
  listCoupons,
  REDEMPTION_REFUSED,
  redeemStatements,
} from "./coupon-storage.ts";
import { couponLabel, redemptionProblem } from "./domain/coupons.ts";

export interface CreateCouponInput {
  code: string;
  percentOff?: number | undefined;
  amountOff?: number | undefined;
  currency?: string | undefined;
  duration: CouponDuration;
  durationInPeriods?: number | undefined;
  maxRedemptions?: number | undefined;
  redeemBy?: string | undefined;
  reusable?: boolean | undefined;
}

export function couponView(row: CouponRow) {
  return {
    id: row.id,
    code: row.code,
    percentOff: row.percentOff,
    amountOff: row.amountOff,
    currency: row.currency,
    duration: row.duration,
    durationInPeriods: row.durationInPeriods,
    maxRedemptions: row.maxRedemptions,
    redeemBy: row.redeemBy,
    timesRedeemed: row.timesRedeemed,
    reusable: row.reusable,
    status: row.status,
    createdAt: row.createdAt,
    updatedAt: row.updatedAt,
  };
}

export function redemptionView(row: CouponRedemptionRow, code: string) {
  return {
    id: row.id,
    couponId: row.couponId,
    code,
    tenantId: row.tenantId,
    subscriptionId: row.subscriptionId,
    invoicesDiscounted: row.invoicesDiscounted,
    redeemedAt: row.redeemedAt,
    endedAt: row.endedAt,
  };
}

const couponNotFound = (code: string) => new ApiError(404, `No coupon with code "${code}"`);
const alreadyHasCoupon = () =>
  new ApiError(
    409,
    "The tenant already has an active coupon: one at a time, until its duration is used up",
  );
const alreadyRedeemed = (code: string) =>
  new ApiError(
    409,
    `Coupon ${code} has already been redeemed by this tenant: it is redeemable once per tenant`,
  );

/**
 * A tenant's subscription as coupons see it: redemptions are made on one.
 * The subscriptions capability owns the table; the composition root hands
 * its lookup in.
 */
export type SubscriptionLookup = (
  tenantId: string,
  subscriptionId: string,
) => Promise<{ subscription: { status: string } } | undefined>;

/** Coupons (platform administrators) and their redemption on a tenant's subscription. */
export class CouponService {
  constructor(
    private readonly db: Database,
    private readonly findSubscription: SubscriptionLookup,
    private readonly audit: AuditContext = SYSTEM_AUDIT,
  ) {}

  async create(input: CreateCouponInput) {
    const now = nowIso();
    const terms = {
      code: input.code,
      percentOff: input.percentOff ?? null,
      amountOff: input.amountOff ?? null,
      currency: input.currency ?? null,
    };
    const values = {
      id: crypto.randomUUID(),
      ...terms,
      label: couponLabel(terms),
      duration: input.duration,
      durationInPeriods: input.durationInPeriods ?? null,
      maxRedemptions: input.maxRedemptions ?? null,
      redeemBy: input.redeemBy ?? null,
      timesRedeemed: 0,
      reusable: input.reusable ?? false,
      status: "ACTIVE" as const,
      createdAt: now,
      updatedAt: now,
    };
    try {
      const [[row]] = await this.db.batch([
        insertCoupon(this.db, values),
        auditEntry(this.db, this.audit, {
          tenantId: null,
          action: "coupon.created",
          targetType: "coupon",
          targetId: values.id,
          changes: fieldChanges(null, couponView(values)),
        }),
      ]);
      if (!row) throw new Error("coupon insert returned no row");
      return couponView(row);
    } catch (error) {
      if (uniqueViolation(error)?.startsWith("coupons.")) {
        throw new ApiError(409, `A coupon with code "${input.code}" already exists`);
      }
      throw error;
    }
  }

  async list() {
    return { data: (await listCoupons(this.db)).map(couponView) };
  }

  /** ARCHIVED: no new redemptions; redemptions already made run their course. */
  async archive(id: string) {
    const found = await findCouponById(this.db, id);
    if (!found) throw new ApiError(404, "Coupon not found");
    const [[archived]] = await this.db.batch([
      archiveCouponStatement(this.db, id, nowIso()),
      auditEntry(
        this.db,
        this.audit,
        {
          tenantId: null,
          action: "coupon.archived",
          targetType: "coupon",
          targetId: id,
          changes: statusChange(found.status, "ARCHIVED"),
        },
        ROW_CHANGED,
      ),
    ]);
    if (!archived) throw new ApiError(409, `Coupon ${found.code} is already archived`);
    return couponView(archived);
  }

  /**
   * Checks a code before it is redeemed as part of another batch (a
   * subscribe); the batch itself re-checks the limits atomically.
   */
  async requireRedeemable(tenantId: string, rawCode: string, now = new Date()) {
    const code = rawCode.trim().toUpperCase();
    const coupon = await findCouponByCode(this.db, code);
    if (!coupon) throw couponNotFound(code);
    const problem = redemptionProblem(coupon, now);
    if (problem) throw new ApiError(409, problem);
    if (!coupon.reusable && (await hasRedeemed(this.db, coupon.id, tenantId))) {
      throw alreadyRedeemed(coupon.code);
    }
    if (await findActiveRedemption(this.db, tenantId)) throw alreadyHasCoupon();
    return coupon;
  }

  /** The statements that redeem `coupon` for the tenant inside a caller's batch, with their audit row. */
  redemptionStatements(coupon: CouponRow, tenantId: string, subscriptionId: string, now: string) {
    const id = crypto.randomUUID();
    const [increment, insert] = redeemStatements(
      this.db,
      coupon.id,
      { id, tenantId, subscriptionId },
      now,
    );
    return {
      id,
      statements: [
        increment,
        insert,
        auditEntry(this.db, this.audit, {
          tenantId,
          action: "coupon.redeemed",
          targetType: "coupon_redemption",
          targetId: id,
          changes: {
            couponId: { after: coupon.id },
            code: { after: coupon.code },
            subscriptionId: { after: subscriptionId },
          },
        }),
      ] as const,
    };
  }

  /** Why a batch with redemptionStatements failed, as the answer to give (or the error itself). */
  async refusal(error: unknown, couponId: string, tenantId: string): Promise<unknown> {
    const message = error instanceof Error ? `${error.message} ${String(error.cause ?? "")}` : "";
    if (REDEMPTION_REFUSED.test(message)) {
      const coupon = await findCouponById(this.db, couponId);
      const problem = coupon ? redemptionProblem(coupon, new Date()) : undefined;
      if (!problem && coupon && !coupon.reusable) {
        if (await hasRedeemed(this.db, coupon.id, tenantId)) return alreadyRedeemed(coupon.code);
      }
      return new ApiError(409, problem ?? "The coupon can no longer be redeemed");
    }
    if (uniqueViolation(error)?.startsWith("coupon_redemptions.")) return alreadyHasCoupon();
    return error;
  }

  /** The tenant's active coupon, seen from one of its subscriptions (404 without one). */
  async active(context: TenantContext, subscriptionId: string) {
    const found = await this.findSubscription(context.tenant.id, subscriptionId);
    if (!found) throw new ApiError(404, "Subscription not found or does not belong to this tenant");
    const active = await findActiveRedemption(this.db, context.tenant.id);
    if (!active) throw new ApiError(404, "The tenant has no active coupon");
    return redemptionView(active.redemption, active.code);
  }

  /** POST /subscriptions/{id}/coupon: redeems a code on the tenant's current subscription. */
  async redeem(context: TenantContext, subscriptionId: string, code: string) {
    const tenantId = context.tenant.id;
    const found = await this.findSubscription(tenantId, subscriptionId);
    if (!found) throw new ApiError(404, "Subscription not found or does not belong to this tenant");
    if (found.subscription.status === "CANCELLED") {
      throw new ApiError(409, "The subscription has ended: redeem the coupon on the current one");
    }
    const coupon = await this.requireRedeemable(tenantId, code);
    const { statements } = this.redemptionStatements(coupon, tenantId, subscriptionId, nowIso());
    try {
      const [, [row]] = await this.db.batch(statements);
      if (!row) throw new Error("redemption insert returned no row");
      return redemptionView(row, coupon.code);
    } catch (error) {
      throw await this.refusal(error, coupon.id, tenantId);
    }
  }
}
