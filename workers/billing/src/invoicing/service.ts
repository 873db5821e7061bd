import {
  cyclePeriodOf,
  MS_PER_DAY,
  type ResetWindow,
  resetWindowAt,
  type SubscriptionTimeline,
  timelineOf,
} from "@edge-platform/shared/billing/billing-period";
import { entitlementCounter } from "@edge-platform/shared/billing/entitlement-counter-client";
import type { SnapshotTerms } from "@edge-platform/shared/billing/entitlement-snapshot";
import { isPlainMeter, type Meter } from "@edge-platform/shared/billing/meter";
import type { Database } from "@edge-platform/shared/db/client";
import type { AuditChanges } from "@edge-platform/shared/db/schema/audit";
import type { InvoiceKind, InvoiceStatus } from "@edge-platform/shared/db/schema/billing";
import type { ResetPeriod } from "@edge-platform/shared/db/schema/catalog";
import { ApiError } from "@edge-platform/shared/http/api-error";
import {
  type AuditAction,
  type AuditContext,
  auditStatement,
  SYSTEM_AUDIT,
  statusChange,
  whenInvoiceReached,
} from "../audit/index.ts";
import { invoiceEventStatement } from "../notifications/index.ts";
import type { PaymentService } from "../payments/index.ts";
import { type InvoiceRow, payStatements } from "../payments/index.ts";
import type { TenantScoped } from "../platform/index.ts";
import { type PageRequest, pageMeta, pageOffset } from "../platform/index.ts";
import { ppmToPercent } from "../pricing/index.ts";
import {
  findCurrentSubscription,
  findSubscriptionById,
  listSnapshots,
  type SubscriptionWithPlan,
} from "../subscriptions/index.ts";
import { progressiveDiscountedIn } from "./discount-storage.ts";
import {
  buildInvoiceDraft,
  INVOICE_DUE_DAYS,
  type InvoiceAction,
  type InvoiceDraft,
  transitionError,
  withCreditBalance,
  withDiscount,
  withTax,
} from "./domain/invoice.ts";
import { readMeterWindows } from "./meter-usage-storage.ts";
import {
  activeRedemptionOf,
  availableCredit,
  FINALIZE_STATUS_STATEMENT,
  finalizeStatements,
  findInvoice,
  findInvoiceForPeriod,
  type InvoiceLineRow,
  insertDraftInvoice,
  listInvoices,
  listLineItems,
  progressiveBilledIn,
  readCreditDraws,
  readUsageWindows,
  taxRateOf,
  voidStatements,
} from "./storage.ts";

/** An unpaid invoice its credit notes corrected: voiding it too would credit twice. */
const correctedByCreditNotes = (invoice: InvoiceRow) =>
  invoice.creditedTotal > 0 && (invoice.status === "OPEN" || invoice.status === "UNCOLLECTIBLE");

const creditedInvoiceNotVoidable = (invoice: InvoiceRow) =>
  new ApiError(
    409,
    `Invoice ${invoice.invoiceNumber ?? invoice.id} has credit notes (${invoice.creditedTotal} cents): correct it with another credit note instead of voiding it`,
  );

const invoiceNotFound = () =>
  new ApiError(404, "Invoice not found or does not belong to this tenant");

/** What a line says, whether stored or only drafted (an upcoming invoice's lines have no ids). */
function lineContentView(line: InvoiceDraft["lines"][number]) {
  return {
    kind: line.kind,
    description: line.description,
    featureLookupKey: line.featureLookupKey,
    usageWindowKey: line.usageWindowKey,
    quantity: line.quantity,
    unitPriceMicroCents: line.unitPriceMicroCents,
    amount: line.amount,
    sortOrder: line.sortOrder,
    pricing: line.pricing ?? null,
    creditGrantId: line.creditGrantId ?? null,
    dimensions: line.dimensions ?? null,
    unitPriceDecimal: line.unitPriceDecimal ?? null,
  };
}

export function lineItemView(line: InvoiceLineRow) {
  return {
    id: line.id,
    invoiceId: line.invoiceId,
    ...lineContentView(line),
    createdAt: line.createdAt,
  };
}

/** An invoice that is not stored: the real invoice's fields where they exist, lines without ids. */
export function upcomingInvoiceView(
  owner: { tenantId: string; subscriptionId: string },
  draft: InvoiceDraft,
  asOf: Date,
) {
  return {
    tenantId: owner.tenantId,
    subscriptionId: owner.subscriptionId,
    kind: draft.kind,
    currency: draft.currency,
    subtotal: draft.subtotal,
    discount: draft.discount,
    tax: draft.tax,
    taxRate: draft.taxRatePpm === null ? null : ppmToPercent(draft.taxRatePpm),
    total: draft.total,
    periodStart: draft.periodStart.toISOString(),
    periodEnd: draft.periodEnd.toISOString(),
    notes: draft.notes,
    asOf: asOf.toISOString(),
    lineItems: draft.lines.map(lineContentView),
  };
}

/** What is still to be paid (REDUCE credit notes lower it; settled invoices owe nothing). */
export function amountDueOf(invoice: Pick<InvoiceRow, "status" | "total" | "reducedTotal">) {
  if (invoice.status === "DRAFT") return invoice.total;
  if (invoice.status === "OPEN" || invoice.status === "UNCOLLECTIBLE") {
    return invoice.total - invoice.reducedTotal;
  }
  return 0;
}

export function invoiceView(invoice: InvoiceRow, lines: InvoiceLineRow[]) {
  return {
    id: invoice.id,
    tenantId: invoice.tenantId,
    subscriptionId: invoice.subscriptionId,
    kind: invoice.kind,
    invoiceNumber: invoice.invoiceNumber,
    status: invoice.status,
    currency: invoice.currency,
    subtotal: invoice.subtotal,
    discount: invoice.discount,
    tax: invoice.tax,
    taxRate: invoice.taxRatePpm === null ? null : ppmToPercent(invoice.taxRatePpm),
    total: invoice.total,
    creditedTotal: invoice.creditedTotal,
    amountDue: amountDueOf(invoice),
    periodStart: invoice.periodStart,
    periodEnd: invoice.periodEnd,
    dueDate: invoice.dueDate,
    finalizedAt: invoice.finalizedAt,
    paidAt: invoice.paidAt,
    voidedAt: invoice.voidedAt,
    uncollectibleAt: invoice.uncollectibleAt,
    notes: invoice.notes,
    createdAt: invoice.createdAt,
    updatedAt: invoice.updatedAt,
    lineItems: lines.filter((line) => line.invoiceId === invoice.id).map(lineItemView),
  };
}

/** The draft of `kind` for a subscription's period, from its snapshots and stored usage. */
export async function draftInvoiceFor(
  db: Database,
  d1: D1Database,
  found: SubscriptionWithPlan,
  kind: InvoiceKind,
  period: { start: Date; end: Date },
  endedAt: Date | null,
  excludeInvoiceId: string | null,
): Promise<InvoiceDraft> {
  const { subscription } = found;
  const snapshots = await listSnapshots(db, [subscription.id]);
  const billableFrom = subscription.trialEndsAt ?? subscription.startedAt;
  const before = (kind === "PRORATION" && endedAt ? endedAt : period.end).toISOString();
  // A period's own invoice bills its usage in full, less its PROGRESSIVE
  // invoices in one line; a PROGRESSIVE invoice bills what nothing billed yet.
  const own = kind !== "PROGRESSIVE";
  // A feature with a meter bills its groups' quantities (usage_meter_groups), not its counted units.
  const meters = meteredFeatures(snapshots);
  const timeline = timelineOf(subscription, found.price.interval);
  const [plainUsage, meterUsage, credits, progressiveBilled] = await Promise.all([
    readUsageWindows(db, subscription.id, billableFrom, before, excludeInvoiceId, own),
    readMeterWindows(d1, db, {
      tenantId: subscription.tenantId,
      subscriptionId: subscription.id,
      meters: new Map(
        [...meters].map(([feature, { meter, resetPeriod }]) => [
          feature,
          { meter, windows: resetWindowsIn(timeline, resetPeriod, billableFrom, before) },
        ]),
      ),
      billableFrom,
      before,
      excludeInvoiceId,
      excludeProgressive: own,
    }),
    readCreditDraws(d1, subscription.id, before, excludeInvoiceId, own),
    own
      ? progressiveBilledIn(
          d1,
          subscription.id,
          period.start.toISOString(),
          before,
          excludeInvoiceId,
        )
      : 0,
  ]);
  return buildInvoiceDraft({
    kind,
    planName: found.plan.name,
    price: found.price,
    period,
    // The first period after a plan change that kept the cycle is a tail of
    // a cycle period: its base fee is prorated against the whole of it.
    cycle: cyclePeriodOf(timeline, period),
    endedAt,
    snapshots,
    usage: [
      ...plainUsage.filter((reading) => !meters.has(reading.featureLookupKey)),
      ...meterUsage,
    ],
    credits,
    progressiveBilled,
    active: {
      from: new Date(billableFrom),
      until: subscription.endedAt ? new Date(subscription.endedAt) : null,
    },
  });
}

/** The features of the snapshots whose meter is not the plain SUM of `amount`. */
function meteredFeatures(
  snapshots: readonly SnapshotTerms[],
): Map<string, { meter: Meter; resetPeriod: ResetPeriod }> {
  const meters = new Map<string, { meter: Meter; resetPeriod: ResetPeriod }>();
  for (const snapshot of snapshots) {
    if (snapshot.meter && !isPlainMeter(snapshot.meter)) {
      meters.set(snapshot.featureLookupKey, {
        meter: snapshot.meter,
        resetPeriod: snapshot.resetPeriod ?? "NEVER",
      });
    }
  }
  return meters;
}

/** The reset windows of a feature that start in [from, before) (at most a few dozen). */
function resetWindowsIn(
  timeline: SubscriptionTimeline,
  resetPeriod: ResetPeriod,
  from: string,
  before: string,
): ResetWindow[] {
  const windows: ResetWindow[] = [];
  let window = resetWindowAt(timeline, resetPeriod, new Date(from));
  while (window.end && window.start.toISOString() < before && windows.length < 60) {
    windows.push(window);
    window = resetWindowAt(timeline, resetPeriod, window.end);
  }
  return windows;
}

/** Writes what the tenant's counter object still holds to usage_aggregates, so a draft sees all usage. */
export async function flushUsage(
  counters: Env["ENTITLEMENT_COUNTER"],
  tenantId: string,
): Promise<void> {
  await entitlementCounter(counters, tenantId).flush();
}

/** DRAFT -> OPEN (number, CHARGE) and its audit row in one batch; false when it was not a DRAFT any more. */
export async function finalizeInvoice(
  d1: D1Database,
  invoice: { id: string; tenantId: string },
  now: Date,
  audit: AuditContext = SYSTEM_AUDIT,
) {
  const dueDate = new Date(now.getTime() + INVOICE_DUE_DAYS * MS_PER_DAY);
  const results = await d1.batch([
    ...finalizeStatements(d1, invoice.id, now, dueDate),
    invoiceAudit(d1, audit, invoice, "invoice.finalized", "DRAFT", "OPEN", now),
    invoiceEventStatement(d1, "invoice.finalized", invoice.id, "OPEN", now),
  ]);
  return (results[FINALIZE_STATUS_STATEMENT]?.meta.changes ?? 0) === 1;
}

/** The audit row of an invoice transition, written only if the batch made it. */
export function invoiceAudit(
  d1: D1Database,
  audit: AuditContext,
  invoice: { id: string; tenantId: string },
  action: AuditAction,
  from: string,
  to: "OPEN" | "VOID" | "PAID",
  now: Date,
  extra: AuditChanges = {},
) {
  return auditStatement(
    d1,
    audit,
    {
      tenantId: invoice.tenantId,
      action,
      targetType: "invoice",
      targetId: invoice.id,
      changes: statusChange(from, to, extra),
    },
    { when: whenInvoiceReached(invoice.id, to, now.toISOString()), now },
  );
}

export class InvoiceService {
  constructor(
    private readonly db: Database,
    private readonly d1: D1Database,
    private readonly counters: Env["ENTITLEMENT_COUNTER"],
    private readonly payments: PaymentService,
    private readonly audit: AuditContext = SYSTEM_AUDIT,
  ) {}

  async list(
    context: TenantScoped,
    page: PageRequest,
    filter: { status?: InvoiceStatus | undefined },
  ) {
    const { rows, total } = await listInvoices(
      this.db,
      context.tenant.id,
      filter,
      pageOffset(page),
      page.limit,
    );
    const lines = await listLineItems(
      this.db,
      rows.map((row) => row.id),
    );
    return { data: rows.map((row) => invoiceView(row, lines)), meta: pageMeta(page, total) };
  }

  async get(context: TenantScoped, id: string) {
    const invoice = await this.require(context, id);
    return invoiceView(invoice, await listLineItems(this.db, [invoice.id]));
  }

  async lineItems(context: TenantScoped, id: string) {
    const invoice = await this.require(context, id);
    return { data: (await listLineItems(this.db, [invoice.id])).map(lineItemView) };
  }

  /**
   * A DRAFT for the current period of the tenant's current subscription,
   * from the usage so far; 409 when that period already has one. The billing
   * cycle rebuilds a DRAFT with the whole period's usage when the period
   * closes (an invoice finalized early keeps its lines; later usage of the
   * window is billed on the next invoice).
   */
  async generate(context: TenantScoped, now: Date = new Date()) {
    const { found, period } = await this.currentPeriod(context);
    return this.createDraft(context, found, "PERIOD", period, null, now);
  }

  /**
   * The invoice the current period would produce if it closed now: the
   * billing cycle's own computation (counter flushed, draftInvoiceFor, a
   * manual DRAFT of the period left out as the cycle rebuilds it, then the
   * coupon discount, tax and credit balance finalize would apply), never stored: no invoice row, no
   * number. 409 once the period's invoice is already issued.
   */
  async upcoming(context: TenantScoped, now: Date = new Date()) {
    const { found, period } = await this.currentPeriod(context);
    const { subscription } = found;
    const issued = await findInvoiceForPeriod(
      this.db,
      subscription.id,
      period.start.toISOString(),
      "PERIOD",
      { live: true },
    );
    if (issued && issued.status !== "DRAFT") {
      throw new ApiError(
        409,
        `The current period's invoice is already issued (${issued.invoiceNumber ?? issued.id}, ${issued.status}); its usage from now on is billed on the next one`,
        { details: { invoiceId: issued.id } },
      );
    }
    await flushUsage(this.counters, context.tenant.id);
    const draft = await draftInvoiceFor(
      this.db,
      this.d1,
      found,
      "PERIOD",
      period,
      null,
      issued?.id ?? null,
    );
    const discounted = withDiscount(
      draft,
      await activeRedemptionOf(this.d1, context.tenant.id),
      await progressiveDiscountedIn(
        this.d1,
        subscription.id,
        period.start.toISOString(),
        period.end.toISOString(),
      ),
    );
    const taxed = withTax(discounted, await taxRateOf(this.d1, context.tenant.id));
    const credit = await availableCredit(this.d1, context.tenant.id, draft.currency);
    return upcomingInvoiceView(
      { tenantId: context.tenant.id, subscriptionId: subscription.id },
      withCreditBalance(taxed, credit),
      now,
    );
  }

  /** The tenant's current subscription and its billable current period (404/409 otherwise). */
  private async currentPeriod(context: TenantScoped) {
    const found = await findCurrentSubscription(this.db, context.tenant.id);
    if (!found) throw new ApiError(404, "No active subscription found for this tenant");
    const { subscription } = found;
    if (subscription.status === "TRIALING") {
      throw new ApiError(409, "The subscription is in its trial: trial periods are not billed");
    }
    const period = {
      start: new Date(subscription.currentPeriodStart),
      end: new Date(subscription.currentPeriodEnd),
    };
    if (period.end.getTime() <= period.start.getTime()) {
      throw new ApiError(409, "The subscription has no billable current period (it is paused)");
    }
    return { found, period };
  }

  /**
   * A replacement for a VOID invoice: a DRAFT for the same subscription,
   * kind and period, built from the usage no billing invoice covers (so the
   * voided usage appears on it once); it gets a new number at finalize.
   * 409 while the period has a live invoice.
   */
  async reissue(context: TenantScoped, voidedInvoiceId: string, now: Date = new Date()) {
    const voided = await this.require(context, voidedInvoiceId.toLowerCase());
    if (voided.status !== "VOID") {
      throw new ApiError(
        409,
        `Only a VOID invoice can be replaced; ${voided.invoiceNumber ?? voided.id} is ${voided.status}`,
      );
    }
    const found = await findSubscriptionById(this.db, voided.subscriptionId);
    if (!found) throw new Error("the voided invoice's subscription is missing");
    const start = new Date(voided.periodStart);
    if (voided.kind === "PRORATION") {
      // A final invoice covers the subscription's last period up to its end.
      const { endedAt, currentPeriodEnd } = found.subscription;
      if (!endedAt) throw new Error("a PRORATION invoice's subscription has not ended");
      return this.createDraft(
        context,
        found,
        "PRORATION",
        { start, end: new Date(currentPeriodEnd) },
        new Date(endedAt),
        now,
      );
    }
    return this.createDraft(
      context,
      found,
      "PERIOD",
      { start, end: new Date(voided.periodEnd) },
      null,
      now,
    );
  }

  private async createDraft(
    context: TenantScoped,
    found: SubscriptionWithPlan,
    kind: InvoiceKind,
    period: { start: Date; end: Date },
    endedAt: Date | null,
    now: Date,
  ) {
    const { subscription } = found;
    const periodStart = period.start.toISOString();
    const existing = await findInvoiceForPeriod(this.db, subscription.id, periodStart, kind, {
      live: true,
    });
    if (existing) throw this.alreadyExists(existing);
    await flushUsage(this.counters, context.tenant.id);
    const draft = await draftInvoiceFor(this.db, this.d1, found, kind, period, endedAt, null);
    const id = crypto.randomUUID();
    const created = await insertDraftInvoice(
      this.d1,
      { id, tenantId: context.tenant.id, subscriptionId: subscription.id },
      draft,
      now.toISOString(),
    );
    if (!created) {
      const raced = await findInvoiceForPeriod(this.db, subscription.id, periodStart, kind, {
        live: true,
      });
      if (raced) throw this.alreadyExists(raced);
    }
    return this.get(context, id);
  }

  /** DRAFT -> OPEN, then the first payment attempt (its failure is retried by the billing cycle). */
  async finalize(context: TenantScoped, id: string, now: Date = new Date()) {
    const invoice = await this.require(context, id);
    if (!(await finalizeInvoice(this.d1, invoice, now, this.audit))) {
      throw await this.refused(context, id, "finalize");
    }
    try {
      await this.payments.attempt(invoice.id, 1, now);
    } catch (error) {
      console.error(
        JSON.stringify({
          level: "error",
          msg: "first payment attempt failed; the billing cycle retries it",
          invoiceId: invoice.id,
          error: String(error),
        }),
      );
    }
    return this.get(context, id);
  }

  async void(context: TenantScoped, id: string, now: Date = new Date()) {
    const invoice = await this.require(context, id);
    if (correctedByCreditNotes(invoice)) throw creditedInvoiceNotVoidable(invoice);
    const results = await this.d1.batch([
      ...voidStatements(this.d1, invoice.id, now),
      invoiceAudit(this.d1, this.audit, invoice, "invoice.voided", invoice.status, "VOID", now),
      invoiceEventStatement(this.d1, "invoice.voided", invoice.id, "VOID", now),
    ]);
    if ((results[0]?.meta.changes ?? 0) !== 1) {
      const current = await this.require(context, id);
      if (correctedByCreditNotes(current)) throw creditedInvoiceNotVoidable(current);
      throw await this.refused(context, id, "void");
    }
    if (invoice.kind === "TOP_UP") await this.refreshCredits(invoice.tenantId);
    return this.get(context, id);
  }

  /** Paid outside the provider (bank transfer, cheque): PAYMENT without a provider reference. */
  async markPaid(context: TenantScoped, id: string, now: Date = new Date()) {
    const invoice = await this.require(context, id);
    const results = await this.d1.batch([
      ...payStatements(this.d1, invoice.id, now, { attemptId: null, externalReference: null }),
      invoiceAudit(
        this.d1,
        this.audit,
        invoice,
        "invoice.marked_paid",
        invoice.status,
        "PAID",
        now,
        {
          amount: { after: invoice.total },
          currency: { after: invoice.currency },
        },
      ),
      invoiceEventStatement(this.d1, "invoice.paid", invoice.id, "PAID", now),
    ]);
    if ((results[0]?.meta.changes ?? 0) !== 1) throw await this.refused(context, id, "pay");
    if (invoice.kind === "TOP_UP") await this.refreshCredits(invoice.tenantId);
    return this.get(context, id);
  }

  /** A TOP_UP invoice paid or voided changed its credit grant: the counter reloads the grants. */
  private refreshCredits(tenantId: string): Promise<void> {
    return entitlementCounter(this.counters, tenantId).refreshCredits();
  }

  private async require(context: TenantScoped, id: string) {
    const invoice = await findInvoice(this.db, context.tenant.id, id);
    if (!invoice) throw invoiceNotFound();
    return invoice;
  }

  private async refused(context: TenantScoped, id: string, action: InvoiceAction) {
    const current = await this.require(context, id);
    return new ApiError(400, transitionError(action, current.status));
  }

  private alreadyExists(existing: InvoiceRow) {
    return new ApiError(
      409,
      `An invoice for this period already exists (${existing.invoiceNumber ?? existing.id}, ${existing.status}); void it to reissue`,
      { details: { invoiceId: existing.id } },
    );
  }
}
