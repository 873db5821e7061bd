import { entitlementCounter } from "@edge-platform/shared/billing/entitlement-counter-client";
import type { Database } from "@edge-platform/shared/db/client";
import { ApiError } from "@edge-platform/shared/http/api-error";
import {
  type AuditContext,
  auditStatement,
  type RawCondition,
  SYSTEM_AUDIT,
} from "../audit/index.ts";
import type { InvoiceDraft } from "../invoicing/index.ts";
import { draftInvoiceStatements, finalizeInvoice } from "../invoicing/index.ts";
import { tenantEventStatement } from "../notifications/index.ts";
import type { PaymentService } from "../payments/index.ts";
import type { TenantScoped } from "../platform/index.ts";
import {
  centsToMicroCents,
  findTenantById,
  formatCents,
  type PageRequest,
  pageMeta,
  pageOffset,
} from "../platform/index.ts";
import { findCurrentSubscription } from "../subscriptions/index.ts";
import type { TopUpRequest } from "./domain/credits.ts";
import {
  type CreditCategory,
  creditsForPaidCents,
  DEFAULT_GRANT_PRIORITY,
  displayedStatus,
  paidCentsForCredits,
} from "./domain/credits.ts";
import {
  type AutoTopUpRow,
  type CreditGrantRow,
  expiredActiveGrants,
  findAutoTopUp,
  findGrant,
  findGrantByInvoice,
  type GrantTakeBack,
  insertGrantStatement,
  listGrants,
  liveGrants,
  type NewCreditGrant,
  settleGrantStatements,
  takeBackStatements,
  upsertAutoTopUpStatement,
} from "./storage.ts";

export interface NewGrantInput {
  amount: number;
  currency: string;
  category: CreditCategory;
  priority?: number | undefined;
  expiresAt?: string | undefined;
  features?: string[] | undefined;
  paidAmount?: number | undefined;
}

/**
 * Credits of a paid TOP_UP grant that the tenant's counter set aside (so
 * nothing draws them), to be written off in the caller's own D1 batch.
 */
export interface TopUpTakeBackReservation {
  grantId: string;
  /** Grant credits taken back (paid cents converted at the grant's price). */
  credits: number;
  /** The grant's unspent credits after them: 0 ends the grant (VOIDED). */
  remaining: number;
  /**
   * The write-off, for the caller's batch: written_off and the grant's end,
   * the CREDIT_WRITE_OFF ledger entry and the `credit_grant.taken_back`
   * audit row, each only `when` holds (always when omitted) and once.
   */
  statements(when?: RawCondition): D1PreparedStatement[];
  /**
   * The caller's batch did not write the statements: the credits go back
   * to the grant (written off instead when it ended meanwhile). Nothing
   * happens when D1 holds them after all, or on a second call.
   */
  release(): Promise<void>;
  /** The caller's batch wrote them: the counter reloads the grants. */
  written(): Promise<void>;
}

/** A take-back asked for more than the grant has unspent: nothing was taken. */
export interface TakeBackRefusal {
  /** What the grant has unspent, in the invoice's paid cents (rounded down). */
  refused: { unspentPaidCents: number };
}

const grantNotFound = () =>
  new ApiError(404, "Credit grant not found or does not belong to this tenant");

/** Expired grants written off per scheduled run. */
const EXPIRY_BATCH = 100;

/** A grant as the API shows it; `remaining` is the counter's (exact) figure when it has one. */
export function creditGrantView(row: CreditGrantRow, remainingNow?: number) {
  const settled = row.status === "VOIDED" || row.status === "EXPIRED";
  const remaining = settled
    ? 0
    : Math.max(0, remainingNow ?? row.amount - row.drawn - row.written_off);
  return {
    id: row.id,
    amount: row.amount,
    remaining,
    currency: row.currency,
    category: row.category,
    priority: row.priority,
    expiresAt: row.expires_at,
    features: row.features ? (JSON.parse(row.features) as string[]) : null,
    status: displayedStatus(row.status, remaining),
    paidAmount: row.category === "paid" ? (row.paid_amount ?? row.amount) : null,
    invoiceId: row.invoice_id,
    writtenOff: row.written_off,
    createdAt: row.created_at,
    endedAt: row.ended_at,
  };
}

/** The grant `create` stores: a paid one waits for its TOP_UP invoice (PENDING). */
function newGrant(
  tenantId: string,
  input: NewGrantInput,
  now: Date,
  automatic: { grantId: string } | undefined,
): NewCreditGrant {
  return {
    id: automatic?.grantId ?? crypto.randomUUID(),
    tenantId,
    amount: input.amount,
    currency: input.currency.toLowerCase(),
    category: input.category,
    priority: input.priority ?? DEFAULT_GRANT_PRIORITY,
    expiresAt: input.expiresAt ? new Date(input.expiresAt).toISOString() : null,
    features: input.features ? [...new Set(input.features)].sort() : null,
    paidAmount: input.category === "paid" ? (input.paidAmount ?? input.amount) : null,
    status: input.category === "paid" ? "PENDING" : "ACTIVE",
    invoiceId: null,
    autoTopUp: automatic !== undefined,
    now: now.toISOString(),
  };
}

/**
 * Credit grants and the balance. D1 holds the grants; the tenant's
 * EntitlementCounter draws them (and is told after every change here, so
 * its next decision sees it).
 */
export class CreditService {
  constructor(
    private readonly db: Database,
    private readonly d1: D1Database,
    private readonly counters: Env["ENTITLEMENT_COUNTER"],
    private readonly payments: PaymentService,
    private readonly audit: AuditContext = SYSTEM_AUDIT,
  ) {}

  /**
   * A promotional grant is ACTIVE at once. A paid grant is PENDING with a
   * TOP_UP invoice for `paidAmount`, inserted in the same batch, then
   * finalized and charged like any other invoice: the grant turns ACTIVE
   * when that invoice is paid, VOIDED when it is voided.
   */
  async create(
    context: TenantScoped,
    input: NewGrantInput,
    now: Date = new Date(),
    automatic?: { grantId: string },
  ) {
    const tenantId = context.tenant.id;
    const grant = newGrant(tenantId, input, now, automatic);
    if (grant.expiresAt && Date.parse(grant.expiresAt) <= now.getTime()) {
      throw new ApiError(400, "expiresAt must be in the future");
    }
    const audited = this.grantCreatedAudit(grant, now);
    if (grant.category === "promotional") {
      await this.d1.batch([insertGrantStatement(this.d1, grant), audited]);
    } else {
      await this.createPaid(grant, audited, now, automatic !== undefined);
    }
    await this.refresh(tenantId);
    return this.get(context, grant.id);
  }

  private grantCreatedAudit(grant: NewCreditGrant, now: Date) {
    return auditStatement(
      this.d1,
      this.audit,
      {
        tenantId: grant.tenantId,
        action: "credit_grant.created",
        targetType: "credit_grant",
        targetId: grant.id,
        changes: {
          amount: { after: grant.amount },
          currency: { after: grant.currency },
          category: { after: grant.category },
          priority: { after: grant.priority },
          ...(grant.expiresAt ? { expiresAt: { after: grant.expiresAt } } : {}),
          ...(grant.features ? { features: { after: grant.features } } : {}),
          ...(grant.paidAmount !== null ? { paidAmount: { after: grant.paidAmount } } : {}),
        },
      },
      { now },
    );
  }

  /**
   * The PENDING grant and its TOP_UP invoice in one batch, so neither exists
   * without the other; then the invoice is finalized and charged.
   */
  private async createPaid(
    grant: NewCreditGrant,
    audited: D1PreparedStatement,
    now: Date,
    automatic: boolean,
  ) {
    const { id, tenantId, currency } = grant;
    const found = await findCurrentSubscription(this.db, tenantId);
    if (!found) {
      throw new ApiError(
        409,
        "A paid credit grant is invoiced on the tenant's subscription, and the tenant has none",
      );
    }
    const invoiceId = crypto.randomUUID();
    grant.invoiceId = invoiceId;
    const invoice = { id: invoiceId, tenantId, subscriptionId: found.subscription.id };
    await this.d1.batch([
      ...draftInvoiceStatements(
        this.d1,
        invoice,
        topUpDraft(grant.amount, grant.paidAmount ?? grant.amount, currency, now),
        grant.now,
      ),
      insertGrantStatement(this.d1, grant),
      audited,
      ...(automatic
        ? [
            tenantEventStatement(
              this.d1,
              {
                type: "credits.balance_low",
                tenantId,
                data: { grantId: id, topUpAmount: grant.amount, currency, invoiceId },
              },
              { now, id: `evt_credits_balance_low_${id}` },
            ),
          ]
        : []),
    ]);
    await finalizeInvoice(this.d1, invoice, now, this.audit);
    await this.attemptTopUpPayment(invoiceId, now);
  }

  /** The grant exists either way: a failed charge is left to the billing cycle's retries. */
  private async attemptTopUpPayment(invoiceId: string, now: Date) {
    try {
      await this.payments.attempt(invoiceId, 1, now);
    } catch (error) {
      console.error(
        JSON.stringify({
          level: "error",
          msg: "top-up payment attempt failed; the billing cycle retries it",
          invoiceId,
          error: String(error),
        }),
      );
    }
  }

  /**
   * The automatic top-up the tenant's counter asked for (one at a time): a
   * paid grant of the rule's amount with the id the counter chose, so a
   * retry after a failure creates it once.
   */
  async autoTopUp(tenantId: string, request: TopUpRequest, now: Date = new Date()) {
    if (await findGrant(this.d1, tenantId, request.grantId)) return;
    const tenant = await findTenantById(this.db, tenantId);
    if (!tenant) return;
    try {
      await this.create(
        { tenant },
        { amount: request.amount, currency: request.currency, category: "paid" },
        now,
        { grantId: request.grantId },
      );
    } catch (error) {
      // A refusal (no subscription to invoice any more) is final: retrying cannot help.
      if (!(error instanceof ApiError)) throw error;
      console.error(
        JSON.stringify({
          level: "error",
          msg: "automatic top-up refused",
          tenantId,
          error: error.message,
        }),
      );
    }
  }

  /** Sets the tenant's automatic top-up rule (turning it on clears a decline's reason). */
  async setAutoTopUp(
    context: TenantScoped,
    rule: { enabled: boolean; threshold: number; amount: number },
    now: Date = new Date(),
  ) {
    const tenantId = context.tenant.id;
    const before = await findAutoTopUp(this.d1, tenantId);
    await this.d1.batch([
      upsertAutoTopUpStatement(this.d1, tenantId, rule, now),
      auditStatement(
        this.d1,
        this.audit,
        {
          tenantId,
          action: "credit_auto_top_up.updated",
          targetType: "tenant",
          targetId: tenantId,
          changes: {
            enabled: { before: before ? before.enabled === 1 : null, after: rule.enabled },
            threshold: { before: before?.threshold ?? null, after: rule.threshold },
            amount: { before: before?.amount ?? null, after: rule.amount },
          },
        },
        { now },
      ),
    ]);
    await this.refresh(tenantId);
    const stored = autoTopUpView(await findAutoTopUp(this.d1, tenantId));
    if (!stored) throw new Error("the automatic top-up rule was not stored");
    return stored;
  }

  /** A tenant buying credit itself: a paid grant of `amount` in its subscription's currency. */
  async topUp(context: TenantScoped, amount: number, now: Date = new Date()) {
    if (context.tenant.status !== "ACTIVE") {
      throw new ApiError(
        403,
        `Tenant is ${context.tenant.status.toLowerCase()}: it can be read but not changed`,
      );
    }
    const found = await findCurrentSubscription(this.db, context.tenant.id);
    if (!found) {
      throw new ApiError(409, "Credit is bought on the tenant's subscription, and it has none");
    }
    return this.create(
      context,
      { amount, currency: found.price.currency, category: "paid", paidAmount: amount },
      now,
    );
  }

  async get(context: TenantScoped, id: string) {
    const row = await findGrant(this.d1, context.tenant.id, id);
    if (!row) throw grantNotFound();
    const remaining = await this.remainingByGrant(context.tenant.id);
    return creditGrantView(row, remaining.get(row.id));
  }

  async list(context: TenantScoped, page: PageRequest) {
    const [{ rows, total }, remaining] = await Promise.all([
      listGrants(this.d1, context.tenant.id, pageOffset(page), page.limit),
      this.remainingByGrant(context.tenant.id),
    ]);
    return {
      data: rows.map((row) => creditGrantView(row, remaining.get(row.id))),
      meta: pageMeta(page, total),
    };
  }

  /**
   * The balance in the subscription's currency (what its usage draws): the
   * cents left on ACTIVE, unexpired grants in it, with the grants that are
   * live (ACTIVE, EXHAUSTED or PENDING payment) in burn-down order.
   */
  async balance(context: TenantScoped, now: Date = new Date()) {
    const tenantId = context.tenant.id;
    const [found, rows, remaining, rule] = await Promise.all([
      findCurrentSubscription(this.db, tenantId),
      liveGrants(this.d1, tenantId),
      this.remainingByGrant(tenantId),
      findAutoTopUp(this.d1, tenantId),
    ]);
    const currency = found?.price.currency ?? rows[0]?.currency ?? "usd";
    const grants = rows
      .filter((row) => row.currency === currency)
      .map((row) => creditGrantView(row, remaining.get(row.id)));
    const balance = grants
      .filter(
        (grant) =>
          grant.status === "ACTIVE" &&
          (grant.expiresAt === null || Date.parse(grant.expiresAt) > now.getTime()),
      )
      .reduce((sum, grant) => sum + grant.remaining, 0);
    return { balance, currency, grants, autoTopUp: autoTopUpView(rule) };
  }

  /** Ends an ACTIVE grant; what it still held is written off (a CREDIT_WRITE_OFF ledger entry). */
  async void(context: TenantScoped, id: string, now: Date = new Date()) {
    const row = await findGrant(this.d1, context.tenant.id, id);
    if (!row) throw grantNotFound();
    if (row.status === "PENDING") {
      throw new ApiError(
        409,
        `The grant is waiting for its TOP_UP invoice to be paid: void that invoice (${row.invoice_id}) instead`,
      );
    }
    if (row.status !== "ACTIVE") {
      throw new ApiError(409, `The grant is already ${row.status}`);
    }
    await this.settle(row, "VOIDED", now, this.audit);
    return this.get(context, id);
  }

  /** The scheduled write-off: every ACTIVE grant past its expiry (up to a batch per run). */
  async expireDue(now: Date = new Date()): Promise<number> {
    const due = await expiredActiveGrants(this.d1, now, EXPIRY_BATCH);
    for (const row of due) await this.settle(row, "EXPIRED", now, SYSTEM_AUDIT);
    return due.length;
  }

  /**
   * The counter stops drawing the grant first and answers what it held
   * (exact: nothing can be drawn after), then one D1 batch records the
   * status, the write-off, its ledger entry, the audit row and, for an
   * expiry, the credits.expired event.
   */
  private async settle(
    row: CreditGrantRow,
    status: "VOIDED" | "EXPIRED",
    now: Date,
    audit: AuditContext,
  ) {
    const counter = entitlementCounter(this.counters, row.tenant_id);
    const held =
      (await counter.settleCreditGrant(row.id, status)) ??
      Math.max(0, row.amount - row.drawn - row.written_off);
    const at = now.toISOString();
    const reached = {
      sql: "EXISTS (SELECT 1 FROM credit_grants WHERE id = ? AND status = ? AND ended_at = ?)",
      params: [row.id, status, at],
    };
    await this.d1.batch([
      ...settleGrantStatements(
        this.d1,
        { id: row.id, tenantId: row.tenant_id, currency: row.currency },
        status,
        held,
        now,
      ),
      auditStatement(
        this.d1,
        audit,
        {
          tenantId: row.tenant_id,
          action: status === "VOIDED" ? "credit_grant.voided" : "credit_grant.expired",
          targetType: "credit_grant",
          targetId: row.id,
          changes: { status: { before: row.status, after: status }, writtenOff: { after: held } },
        },
        { now, when: reached },
      ),
      ...(status === "EXPIRED"
        ? [
            tenantEventStatement(
              this.d1,
              {
                type: "credits.expired",
                tenantId: row.tenant_id,
                data: {
                  grantId: row.id,
                  amount: row.amount,
                  writtenOff: held,
                  currency: row.currency,
                  expiresAt: row.expires_at,
                },
              },
              { now, when: reached, id: `evt_credits_expired_${row.id}` },
            ),
          ]
        : []),
    ]);
    await counter.refreshCredits();
  }

  /**
   * Takes back `paidCents` of a paid TOP_UP invoice from the grant it
   * bought, in one step: reserveTakeBack, then its statements in a batch
   * of their own. Null when the invoice bought no grant.
   */
  async takeBackTopUp(
    tenantId: string,
    invoiceId: string,
    paidCents: number,
    now: Date,
    audit: AuditContext,
  ): Promise<{ grantId: string; credits: number } | TakeBackRefusal | null> {
    const reserved = await this.reserveTakeBack(tenantId, invoiceId, paidCents, now, audit);
    if (reserved === null || "refused" in reserved) return reserved;
    const statements = reserved.statements();
    if (statements.length > 0) {
      try {
        await this.d1.batch(statements);
      } catch (error) {
        await reserved.release();
        throw error;
      }
      await reserved.written();
    }
    return { grantId: reserved.grantId, credits: reserved.credits };
  }

  /**
   * Sets aside the grant credits that `paidCents` of the TOP_UP invoice
   * bought (paidCents x amount / paidAmount, rounded half up), all or
   * nothing: the tenant's counter takes them from the grant's unspent part
   * in one synchronous step. Refused when less is unspent (nothing taken);
   * null when the invoice bought no grant. The caller writes the
   * reservation's statements in its own batch, then calls `written` or,
   * when the batch did not write them, `release`; a reservation left
   * neither way goes back to the grant once stale (RESERVATION_STALE_MS).
   */
  async reserveTakeBack(
    tenantId: string,
    invoiceId: string,
    paidCents: number,
    now: Date,
    audit: AuditContext = this.audit,
  ): Promise<TopUpTakeBackReservation | TakeBackRefusal | null> {
    const row = await findGrantByInvoice(this.d1, tenantId, invoiceId);
    if (!row) return null;
    const paidAmount = row.paid_amount ?? row.amount;
    const credits = creditsForPaidCents(paidCents, row.amount, paidAmount);
    const base = { grantId: row.id, credits };
    if (credits === 0) {
      // Nothing to set aside, so nothing to refuse either: the grant stays as it is.
      const left =
        row.status === "ACTIVE" ? (await this.remainingByGrant(tenantId)).get(row.id) : 0;
      const nothing = async () => {};
      return {
        ...base,
        remaining: left ?? 0,
        statements: () => [],
        release: nothing,
        written: nothing,
      };
    }
    const answer = await this.counter(tenantId).reserveTakeBack({
      tenantId,
      grantId: row.id,
      credits,
    });
    if (!answer || "refused" in answer) {
      const unspent = answer?.refused.unspent ?? 0;
      return {
        refused: { unspentPaidCents: paidCentsForCredits(unspent, row.amount, paidAmount) },
      };
    }
    const takeBack: GrantTakeBack = {
      ...base,
      ...answer.reserved,
      tenantId,
      invoiceId,
      currency: row.currency,
    };
    return {
      ...base,
      remaining: takeBack.remaining,
      statements: (when = { sql: "1", params: [] }) =>
        this.takeBackStatementsOf(takeBack, paidCents, now, audit, when),
      release: async () => {
        await this.counter(tenantId).releaseTakeBack({
          tenantId,
          reservationId: takeBack.reservationId,
        });
      },
      written: () => this.refresh(tenantId),
    };
  }

  private takeBackStatementsOf(
    takeBack: GrantTakeBack,
    paidCents: number,
    now: Date,
    audit: AuditContext,
    when: RawCondition,
  ): D1PreparedStatement[] {
    const { statements, ledgerId } = takeBackStatements(this.d1, takeBack, now, when);
    const ends = takeBack.remaining === 0;
    return [
      ...statements,
      auditStatement(
        this.d1,
        audit,
        {
          tenantId: takeBack.tenantId,
          action: "credit_grant.taken_back",
          targetType: "credit_grant",
          targetId: takeBack.grantId,
          changes: {
            invoiceId: { after: takeBack.invoiceId },
            paidCents: { after: paidCents },
            writtenOff: { after: takeBack.credits },
            ...(ends ? { status: { before: "ACTIVE", after: "VOIDED" } } : {}),
          },
        },
        {
          now,
          when: { sql: "EXISTS (SELECT 1 FROM ledger_entries WHERE id = ?)", params: [ledgerId] },
        },
      ),
    ];
  }

  private counter(tenantId: string) {
    return this.counters.get(this.counters.idFromName(tenantId));
  }

  private async remainingByGrant(tenantId: string): Promise<Map<string, number>> {
    const { grants } = await entitlementCounter(this.counters, tenantId).credits();
    return new Map(grants.map((grant) => [grant.id, grant.remaining]));
  }

  private refresh(tenantId: string): Promise<void> {
    return entitlementCounter(this.counters, tenantId).refreshCredits();
  }
}

export function autoTopUpView(rule: AutoTopUpRow | null) {
  if (!rule) return null;
  return {
    enabled: rule.enabled === 1,
    threshold: rule.threshold,
    amount: rule.amount,
    disabledReason: rule.disabled_reason,
    updatedAt: rule.updated_at,
  };
}

/** The TOP_UP invoice's draft: one CREDIT_PURCHASE line for what the tenant pays. */
export function topUpDraft(
  amount: number,
  paidAmount: number,
  currency: string,
  now: Date,
): InvoiceDraft {
  return {
    kind: "TOP_UP",
    currency,
    periodStart: now,
    periodEnd: now,
    subtotal: paidAmount,
    discount: 0,
    tax: 0,
    taxRatePpm: null,
    total: paidAmount,
    notes: null,
    lines: [
      {
        kind: "CREDIT_PURCHASE",
        description: `Prepaid credit: ${formatCents(amount, currency)}`,
        featureLookupKey: null,
        usageWindowKey: null,
        quantity: 1,
        unitPriceMicroCents: centsToMicroCents(paidAmount),
        amount: paidAmount,
        sortOrder: 0,
        pricing: null,
      },
    ],
  };
}
