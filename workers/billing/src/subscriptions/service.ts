import {
  initialSubscriptionPeriods,
  isInTrial,
  planChangeCycleOrigin,
  timelineOf,
} from "@edge-platform/shared/billing/billing-period";
import { entitlementCounter } from "@edge-platform/shared/billing/entitlement-counter-client";
import { buildEntitlementSnapshots } from "@edge-platform/shared/billing/entitlement-snapshot";
import { type Database, nowIso, uniqueViolation } from "@edge-platform/shared/db/client";
import type { AuditChanges } from "@edge-platform/shared/db/schema/audit";
import type { BillingInterval } from "@edge-platform/shared/db/schema/catalog";
import { ApiError } from "@edge-platform/shared/http/api-error";
import {
  type AuditAction,
  type AuditContext,
  auditEntry,
  ROW_CHANGED,
  SYSTEM_AUDIT,
  statusChange,
} from "../audit/index.ts";
import { findPlanById, findPlanPrice, listPlanEntitlements } from "../catalog/index.ts";
import { tenantCancellationHooks } from "../identity/index.ts";
import { type SubscriptionChange, subscriptionEventEntry } from "../notifications/index.ts";
import type { TenantContext } from "../platform/index.ts";
import { type PageRequest, pageMeta, pageOffset } from "../platform/index.ts";
import type { CouponService } from "../pricing/index.ts";
import { trialDaysFor } from "./domain/trials.ts";
import {
  cancelAtPeriodEnd,
  cancelNow,
  endCurrentSubscriptionsStatement,
  findCurrentSubscription,
  findSubscription,
  listSnapshots,
  listSubscriptions,
  pause,
  resume,
  type SubscriptionWithPlan,
  subscribeStatements,
  tenantHadTrial,
} from "./storage.ts";
import { subscriptionView } from "./views.ts";

// A cancelled tenant's subscriptions end in the same batch that cancels it.
tenantCancellationHooks.push((db, tenantId, now) => [
  endCurrentSubscriptionsStatement(db, tenantId, now),
]);

const subscriptionNotFound = () =>
  new ApiError(404, "Subscription not found or does not belong to this tenant");

/**
 * The new subscription's trial and first period; a plan change keeps the
 * replaced subscription's billing cycle when planChangeCycleOrigin says so.
 */
function startingPeriods(
  price: { interval: BillingInterval; trialDays: number | null },
  replaced: SubscriptionWithPlan | undefined,
  hadTrial: boolean,
  startedAt: Date,
) {
  const trialDays = trialDaysFor(price, { planChange: replaced !== undefined, hadTrial });
  const cycleOrigin = planChangeCycleOrigin(
    replaced
      ? {
          status: replaced.subscription.status,
          timeline: timelineOf(replaced.subscription, replaced.price.interval),
        }
      : null,
    { interval: price.interval, trialDays, at: startedAt },
  );
  const periods = initialSubscriptionPeriods(startedAt, price.interval, trialDays, cycleOrigin);
  return { trialDays, periods };
}

/**
 * The error a failed subscribe batch is answered with: the coupon's own
 * refusal when its limits stopped the batch, a 409 when a concurrent
 * change to the tenant's subscription or trial won the race.
 */
async function subscribeRefusal(
  error: unknown,
  coupons: CouponService,
  coupon: { id: string } | null,
  tenantId: string,
): Promise<unknown> {
  if (coupon) {
    const refusal = await coupons.refusal(error, coupon.id, tenantId);
    if (refusal !== error) return refusal;
  }
  const violated = uniqueViolation(error);
  if (violated?.startsWith("subscriptions.") || violated?.startsWith("tenant_trials.")) {
    return new ApiError(
      409,
      "Another subscription change for this tenant happened at the same time; retry",
    );
  }
  return error;
}

export class SubscriptionService {
  constructor(
    private readonly db: Database,
    private readonly counters: Env["ENTITLEMENT_COUNTER"],
    /** Redeems the coupon a new subscription names. */
    private readonly coupons: CouponService,
    /** Bills a paused subscription's period up to the pause if not yet billed (the billing cycle's close). */
    private readonly closePausedPeriod?: (found: SubscriptionWithPlan, now: Date) => Promise<void>,
    private readonly audit: AuditContext = SYSTEM_AUDIT,
  ) {}

  /**
   * Subscribes the tenant. With a current subscription this is a plan
   * change: the old one is CANCELLED (and kept), the new one starts with
   * fresh snapshots of the target plan's entitlements as they are now. A
   * change at the same interval keeps the billing cycle (rule in
   * planChangeCycleOrigin): the new subscription's first period runs to the
   * old period's end, where it is billed its prorated base fee, while the
   * old one's final invoice credits its unused part.
   */
  async subscribe(
    context: TenantContext,
    input: { planId: string; priceId: string; couponCode?: string | undefined },
  ) {
    const { coupons } = this;
    const { plan, price, entitlements, replaced, hadTrial } = await this.subscribeTerms(
      context,
      input,
    );
    const snapshots = buildEntitlementSnapshots(
      entitlements.map(({ entitlement, feature }) => ({ feature, terms: entitlement })),
    );
    const startedAt = new Date();
    const now = startedAt.toISOString();
    const { trialDays, periods } = startingPeriods(price, replaced, hadTrial, startedAt);
    const id = crypto.randomUUID();
    const coupon = input.couponCode
      ? await coupons.requireRedeemable(context.tenant.id, input.couponCode, startedAt)
      : null;
    const redemption = coupon
      ? coupons.redemptionStatements(coupon, context.tenant.id, id, now).statements
      : [];
    try {
      await this.db.batch([
        ...subscribeStatements(
          this.db,
          {
            id,
            tenantId: context.tenant.id,
            planId: plan.id,
            priceId: price.id,
            status: periods.status,
            startedAt: now,
            currentPeriodStart: periods.currentPeriodStart.toISOString(),
            currentPeriodEnd: periods.currentPeriodEnd.toISOString(),
            billingAnchor: periods.billingAnchor,
            billingCycleOrigin: periods.billingCycleOrigin.toISOString(),
            trialEndsAt: periods.trialEndsAt?.toISOString() ?? null,
            createdAt: now,
            updatedAt: now,
          },
          snapshots,
          now,
          replaced?.subscription.id ?? null,
        ),
        this.subscribedEntry(context, id, { plan, price, replaced, periods, trialDays }),
        subscriptionEventEntry(this.db, id, replaced ? "plan_changed" : "created", startedAt, {
          previousSubscriptionId: replaced?.subscription.id ?? null,
        }),
        ...redemption,
      ]);
    } catch (error) {
      throw await subscribeRefusal(error, coupons, coupon, context.tenant.id);
    }
    await this.refreshCounter(context.tenant.id);
    return this.get(context, id);
  }

  /**
   * What a subscribe needs, read at once: the plan and price (refused
   * unless both are active), the plan's entitlements, the subscription it
   * replaces and whether the tenant already had its trial.
   */
  private async subscribeTerms(context: TenantContext, input: { planId: string; priceId: string }) {
    const [plan, price, entitlements, replaced, hadTrial] = await Promise.all([
      findPlanById(this.db, input.planId),
      findPlanPrice(this.db, input.planId, input.priceId),
      listPlanEntitlements(this.db, input.planId),
      findCurrentSubscription(this.db, context.tenant.id),
      tenantHadTrial(this.db, context.tenant.id),
    ]);
    if (!plan) throw new ApiError(404, `Plan with ID "${input.planId}" not found`);
    if (plan.status !== "ACTIVE") {
      throw new ApiError(
        400,
        `Plan "${plan.slug}" is not active - cannot subscribe to archived plans`,
      );
    }
    if (!price?.isActive) {
      throw new ApiError(404, "Price not found, does not belong to this plan, or is inactive");
    }
    return { plan, price, entitlements, replaced, hadTrial };
  }

  /** The audit row of a subscribe: `subscription.changed` when it replaces the current one. */
  private subscribedEntry(
    context: TenantContext,
    id: string,
    change: {
      plan: { id: string };
      price: { id: string };
      replaced: SubscriptionWithPlan | undefined;
      periods: { status: string };
      trialDays: number | undefined;
    },
  ) {
    const { plan, price, replaced, periods, trialDays } = change;
    return auditEntry(this.db, this.audit, {
      tenantId: context.tenant.id,
      action: replaced ? "subscription.changed" : "subscription.created",
      targetType: "subscription",
      targetId: id,
      changes: {
        planId: { before: replaced?.subscription.planId ?? null, after: plan.id },
        priceId: { before: replaced?.subscription.priceId ?? null, after: price.id },
        status: { before: replaced?.subscription.status ?? null, after: periods.status },
        ...(replaced ? { replacedSubscriptionId: { after: replaced.subscription.id } } : {}),
        ...(trialDays ? { trialDays: { after: trialDays } } : {}),
      },
    });
  }

  async get(context: TenantContext, id: string) {
    const found = await findSubscription(this.db, context.tenant.id, id);
    if (!found) throw subscriptionNotFound();
    return this.viewOne(found);
  }

  async list(context: TenantContext, page: PageRequest) {
    const { rows, total } = await listSubscriptions(
      this.db,
      context.tenant.id,
      pageOffset(page),
      page.limit,
    );
    return { data: await this.view(rows), meta: pageMeta(page, total) };
  }

  async current(context: TenantContext) {
    const found = await findCurrentSubscription(this.db, context.tenant.id);
    if (!found) {
      throw new ApiError(404, `No active subscription found for tenant "${context.tenant.id}"`);
    }
    return this.viewOne(found);
  }

  /**
   * Immediately (CANCELLED now) or at the end of the current period (stays
   * current until then; the scheduled job ends it). A second cancel is 409.
   */
  async cancel(context: TenantContext, id: string, atPeriodEnd: boolean) {
    const now = nowIso();
    const before = await this.require(context, id);
    const [[changed]] = await this.db.batch([
      atPeriodEnd
        ? cancelAtPeriodEnd(this.db, context.tenant.id, id, now)
        : cancelNow(this.db, context.tenant.id, id, now),
      this.entry(
        context,
        "subscription.cancelled",
        id,
        atPeriodEnd
          ? { cancelAtPeriodEnd: { before: false, after: true } }
          : statusChange(before.subscription.status, "CANCELLED"),
      ),
      this.event(id, atPeriodEnd ? "cancel_scheduled" : "cancelled"),
    ]);
    if (!changed) {
      const existing = await this.require(context, id);
      if (existing.subscription.status === "CANCELLED") {
        throw new ApiError(409, "Subscription is already cancelled");
      }
      throw new ApiError(
        409,
        `Subscription is already set to cancel at the end of its period (${existing.subscription.currentPeriodEnd})`,
      );
    }
    await this.refreshCounter(context.tenant.id);
    return this.get(context, id);
  }

  /** Suspends access without ending the subscription. */
  async pause(context: TenantContext, id: string) {
    const before = await this.require(context, id);
    const [[changed]] = await this.db.batch([
      pause(this.db, context.tenant.id, id, nowIso()),
      this.entry(
        context,
        "subscription.paused",
        id,
        statusChange(before.subscription.status, "PAUSED"),
      ),
      this.event(id, "paused"),
    ]);
    if (!changed) {
      const existing = await this.require(context, id);
      throw new ApiError(
        409,
        existing.subscription.status === "PAUSED"
          ? "Subscription is already paused"
          : "A cancelled subscription cannot be paused",
      );
    }
    await this.refreshCounter(context.tenant.id);
    return this.get(context, id);
  }

  /**
   * PAUSED -> ACTIVE in a new billing cycle starting now (TRIALING, period
   * unchanged, while the trial runs). The period cut at the pause is billed
   * first (once; the cron may already have), so the paused time is never
   * billed and the pre-pause time always is.
   */
  async resume(context: TenantContext, id: string) {
    const found = await this.require(context, id);
    const { subscription } = found;
    if (subscription.status !== "PAUSED") throw new ApiError(409, "Subscription is not paused");
    const resumedAt = new Date();
    if (
      this.closePausedPeriod &&
      !isInTrial(timelineOf(subscription, found.price.interval), resumedAt)
    ) {
      try {
        await this.closePausedPeriod(found, resumedAt);
      } catch (error) {
        console.error(
          JSON.stringify({
            level: "error",
            msg: "billing the period before the pause failed",
            subscriptionId: id,
            error: String(error),
          }),
        );
        throw new ApiError(503, "Could not bill the period before the pause; try again shortly");
      }
    }
    const cycle = initialSubscriptionPeriods(resumedAt, found.price.interval);
    const [[changed]] = await this.db.batch([
      resume(
        this.db,
        context.tenant.id,
        id,
        subscription.currentPeriodStart,
        {
          origin: cycle.billingCycleOrigin.toISOString(),
          anchor: cycle.billingAnchor,
          start: cycle.currentPeriodStart.toISOString(),
          end: cycle.currentPeriodEnd.toISOString(),
        },
        resumedAt.toISOString(),
      ),
      this.entry(
        context,
        "subscription.resumed",
        id,
        statusChange(
          "PAUSED",
          subscription.trialEndsAt && subscription.trialEndsAt > resumedAt.toISOString()
            ? "TRIALING"
            : "ACTIVE",
        ),
      ),
      this.event(id, "resumed", resumedAt),
    ]);
    if (!changed) {
      throw new ApiError(409, "The subscription changed meanwhile (not paused any more); retry");
    }
    await this.refreshCounter(context.tenant.id);
    return this.get(context, id);
  }

  /**
   * `subscription.changed` for the tenant's webhooks, placed right after
   * `entry`: ROW_CHANGED then holds exactly when the audit row was written,
   * i.e. when the guarded update matched.
   */
  private event(id: string, change: SubscriptionChange, now: Date = new Date()) {
    return subscriptionEventEntry(this.db, id, change, now, { when: ROW_CHANGED });
  }

  /** The audit row of a guarded subscription update: written only if the update matched. */
  private entry(context: TenantContext, action: AuditAction, id: string, changes: AuditChanges) {
    return auditEntry(
      this.db,
      this.audit,
      { tenantId: context.tenant.id, action, targetType: "subscription", targetId: id, changes },
      ROW_CHANGED,
    );
  }

  private async require(context: TenantContext, id: string) {
    const found = await findSubscription(this.db, context.tenant.id, id);
    if (!found) throw subscriptionNotFound();
    return found;
  }

  private async viewOne(row: SubscriptionWithPlan) {
    const snapshots = await listSnapshots(this.db, [row.subscription.id]);
    return subscriptionView(row, snapshots);
  }

  private async view(rows: SubscriptionWithPlan[]) {
    const snapshots = await listSnapshots(
      this.db,
      rows.map((row) => row.subscription.id),
    );
    return rows.map((row) => subscriptionView(row, snapshots));
  }

  /**
   * The tenant's counter object caches the current subscription; tell it
   * about the change. If it cannot be reached the change still stands and
   * the object re-reads within its cache lifetime.
   */
  private async refreshCounter(tenantId: string) {
    await refreshEntitlementCounter(this.counters, tenantId);
  }
}

export async function refreshEntitlementCounter(
  counters: Env["ENTITLEMENT_COUNTER"],
  tenantId: string,
) {
  try {
    await entitlementCounter(counters, tenantId).refresh();
  } catch (error) {
    console.error(
      JSON.stringify({
        level: "error",
        msg: "entitlement counter refresh failed",
        tenantId,
        error: String(error),
      }),
    );
  }
}
