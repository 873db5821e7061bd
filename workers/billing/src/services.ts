import { tenantCounterShards } from "@edge-platform/shared/billing/counter-shards";
import { type Database, database } from "@edge-platform/shared/db/client";
import type { Context } from "hono";
import {
  type AuditContext,
  AuditEventService,
  type AuditRouteServices,
  auditContext,
  SYSTEM_AUDIT,
} from "./audit/index.ts";
import {
  type CatalogRouteServices,
  FeatureService,
  PlanEntitlementService,
  PlanService,
} from "./catalog/index.ts";
import {
  type CreditNoteRouteServices,
  CreditNoteService,
  type TopUpTakeBack,
} from "./credit-notes/index.ts";
import { type CreditRouteServices, CreditService } from "./credits/index.ts";
import {
  type CounterEffects,
  type EntitlementRouteServices,
  EntitlementService,
} from "./entitlements/index.ts";
import {
  ApiKeyService,
  type IdentityRouteServices,
  SessionService,
  TenantService,
  UserService,
} from "./identity/index.ts";
import {
  BillingCycle,
  type BillingCycleOptions,
  InvoiceService,
  type InvoicingRouteServices,
  issueProgressiveInvoice,
} from "./invoicing/index.ts";
import {
  deliverySettings,
  type NotificationRouteServices,
  UsageAlertService,
  WebhookEndpointService,
} from "./notifications/index.ts";
import {
  type InvoiceRow,
  LedgerService,
  type PaymentProvider,
  type PaymentProviderSettings,
  type PaymentRouteServices,
  PaymentService,
  ProviderUnavailableError,
  paymentProviderFromEnv,
  pendingReconcileMinutes,
  refreshCreditsOf,
  WebhookService,
} from "./payments/index.ts";
import {
  type AppEnv,
  apiKeyVerifier,
  requireSigningKey,
  type TenantScope,
} from "./platform/index.ts";
import {
  BillingDetailsService,
  CouponService,
  type PricingRouteServices,
} from "./pricing/index.ts";
import {
  findSubscription,
  type SubscriptionRouteServices,
  SubscriptionService,
} from "./subscriptions/index.ts";
import {
  UsageDeadLetterService,
  UsageIngestionService,
  type UsageRouteServices,
  UsageViewService,
} from "./usage/index.ts";

// The worker's composition root: every service is built here, from the
// environment (and, for a request, its audit actor), and handed to the
// routes, the scheduled work, the queue consumers and the Durable Objects.
// Capabilities never build each other's services.

/**
 * The configured payment provider; when it is misconfigured, one that
 * refuses every payment as "unavailable", so invoicing and period changes
 * still run and the attempts are made once the configuration is fixed.
 */
export function paymentProvider(env: Env): PaymentProvider {
  try {
    return paymentProviderFromEnv(env as unknown as PaymentProviderSettings);
  } catch (error) {
    const reason = String(error);
    console.error(JSON.stringify({ level: "error", msg: "payment provider unavailable", reason }));
    const unavailable = () => Promise.reject(new ProviderUnavailableError(reason));
    return {
      name: "unconfigured",
      createCustomer: unavailable,
      createPayment: unavailable,
      retrievePayment: unavailable,
      createRefund: unavailable,
    };
  }
}

/** Payments through `provider`, as `audit` (the system when undefined). */
function paymentsOver(env: Env, provider: PaymentProvider, audit?: AuditContext): PaymentService {
  return new PaymentService(
    database(env.DB),
    env.DB,
    provider,
    audit,
    refreshCreditsOf(env),
    (invoice, paidCents, reference, now) =>
      takeBackRefundedTopUp(env, invoice, paidCents, reference, now),
  );
}

/** A refund the provider made on a paid TOP_UP invoice: its unspent credit goes, with a credit note. */
function takeBackRefundedTopUp(
  env: Env,
  invoice: InvoiceRow,
  paidCents: number,
  reference: string,
  now: Date,
) {
  return creditNotesService(env, SYSTEM_AUDIT).recordProviderTopUpRefund(
    invoice,
    paidCents,
    reference,
    now,
  );
}

/** Payments with the configured provider, as `audit` (the system when undefined). */
export function payments(env: Env, audit?: AuditContext): PaymentService {
  return paymentsOver(env, paymentProvider(env), audit);
}

/** Prepaid credits, paying top-ups through `payments`. */
function credits(env: Env, paymentService: PaymentService, audit?: AuditContext): CreditService {
  return new CreditService(
    database(env.DB),
    env.DB,
    env.ENTITLEMENT_COUNTER,
    paymentService,
    audit,
  );
}

/** A billing cycle charging through `provider`, over the tenants in `scope` (every tenant when undefined). */
export function billingCycleOver(
  env: Env,
  provider: PaymentProvider,
  scope?: TenantScope,
  options: BillingCycleOptions = {},
): BillingCycle {
  return new BillingCycle(env, paymentsOver(env, provider, SYSTEM_AUDIT), scope, options);
}

/** The billing cycle the Cron Trigger runs (see runSubscriptionJobs). */
export function billingCycle(env: Env): BillingCycle {
  return billingCycleOver(env, paymentProvider(env), undefined, {
    pendingReconcileMinutes: pendingReconcileMinutes(
      (env as unknown as PaymentProviderSettings).PAYMENT_PENDING_RECONCILE_MINUTES,
    ),
  });
}

/** The Cron Trigger's write-off of credit grants past their expiry; answers how many it ended. */
export function expireCreditGrants(env: Env, now: Date): Promise<number> {
  return credits(env, payments(env)).expireDue(now);
}

/**
 * What a tenant's usage counter records and these services do: an automatic
 * top-up (charged as the system) and a progressive invoice (charged at once).
 */
export function counterEffects(env: Env): CounterEffects {
  return {
    startAutoTopUp: (tenantId, request) =>
      credits(env, payments(env, SYSTEM_AUDIT)).autoTopUp(tenantId, request),
    issueProgressiveInvoice: (tenantId, request) =>
      issueProgressiveInvoice(env, () => payments(env), tenantId, request),
  };
}

type RequestContext = Context<AppEnv>;
const db = (c: RequestContext) => database(c.env.DB);

const identity: IdentityRouteServices = {
  sessionService: (c) => new SessionService(db(c), requireSigningKey(c), auditContext(c)),
  userService: (c) => new UserService(db(c), auditContext(c)),
  tenantService: (c) => new TenantService(db(c), auditContext(c), apiKeyVerifier(c)),
  apiKeyService: (c) => new ApiKeyService(db(c), auditContext(c), apiKeyVerifier(c)),
};

const catalog: CatalogRouteServices = {
  planService: (c) => new PlanService(db(c), auditContext(c)),
  featureService: (c) => new FeatureService(db(c)),
  planEntitlementService: (c) => new PlanEntitlementService(db(c), auditContext(c)),
};

/** Coupons, finding the subscription a redemption is for through the same connection. */
function coupons(connection: Database, audit: AuditContext): CouponService {
  return new CouponService(
    connection,
    (tenantId, id) => findSubscription(connection, tenantId, id),
    audit,
  );
}

const subscriptions: SubscriptionRouteServices = {
  subscriptionService: (c) =>
    new SubscriptionService(
      db(c),
      c.env.ENTITLEMENT_COUNTER,
      coupons(db(c), auditContext(c)),
      // Built only when a resume has a period to bill (it reads the provider configuration).
      (found, now) => billingCycle(c.env).closePausedPeriod(found, now),
      auditContext(c),
    ),
  /** Display reads of a route behind `replicaReads()`: through its D1 session (read replicas). */
  subscriptionReader: (c) => {
    const replica = database(c.var.replicaSession as unknown as D1Database);
    return new SubscriptionService(
      replica,
      c.env.ENTITLEMENT_COUNTER,
      coupons(replica, auditContext(c)),
      undefined,
      auditContext(c),
    );
  },
};

const entitlements: EntitlementRouteServices = {
  /** The catalog lookup that tells an unknown feature (404) from a denial may lag: a replica serves it. */
  entitlementService: (c) =>
    new EntitlementService(
      c.env.ENTITLEMENT_COUNTER,
      () => database(c.env.DB.withSession("first-unconstrained") as unknown as D1Database),
      (tenantId) => tenantCounterShards(c.env, tenantId),
    ),
};

const paymentRoutes: PaymentRouteServices = {
  paymentService: (c) => payments(c.env, auditContext(c)),
  ledgerService: (c) => new LedgerService(db(c), c.env.DB),
  webhookService: (c) => new WebhookService(db(c), c.env.DB, c.env.WEBHOOK_EVENTS_QUEUE),
};

const invoicing: InvoicingRouteServices = {
  invoiceService: (c) =>
    new InvoiceService(
      db(c),
      c.env.DB,
      c.env.ENTITLEMENT_COUNTER,
      payments(c.env, auditContext(c)),
      auditContext(c),
    ),
};

const creditRoutes: CreditRouteServices = {
  creditService: (c) => credits(c.env, payments(c.env, auditContext(c)), auditContext(c)),
};

/** Credits of a paid TOP_UP invoice's grant, taken back for its credit note. */
function topUpTakeBack(creditService: CreditService): TopUpTakeBack {
  return {
    reserve: async (tenantId, invoiceId, paidCents, now) => {
      const reserved = await creditService.reserveTakeBack(tenantId, invoiceId, paidCents, now);
      return reserved && "refused" in reserved ? reserved.refused : reserved;
    },
  };
}

/** Credit notes, refunding through the configured provider, taking back TOP_UP credit through credits. */
export function creditNotesService(env: Env, audit?: AuditContext): CreditNoteService {
  return new CreditNoteService(
    database(env.DB),
    env.DB,
    paymentProvider(env),
    topUpTakeBack(credits(env, payments(env, audit), audit)),
    audit,
  );
}

const creditNotes: CreditNoteRouteServices = {
  creditNoteService: (c) => creditNotesService(c.env, auditContext(c)),
};

const pricing: PricingRouteServices = {
  couponService: (c) => coupons(db(c), auditContext(c)),
  billingDetailsService: (c) => new BillingDetailsService(db(c), auditContext(c)),
};

const notifications: NotificationRouteServices = {
  usageAlertService: (c) =>
    new UsageAlertService(db(c), c.env.DB, c.env.ENTITLEMENT_COUNTER, auditContext(c)),
  webhookEndpointService: (c) =>
    new WebhookEndpointService(
      c.env.DB,
      c.env.WEBHOOK_DELIVERIES_QUEUE,
      deliverySettings(c.env),
      c.env.WEBHOOK_SECRET_KEY,
      auditContext(c),
    ),
};

const usage: UsageRouteServices = {
  usageViewService: (c) => new UsageViewService(db(c)),
  usageIngestionService: (c) => new UsageIngestionService(c.env),
  usageDeadLetterService: (c) => new UsageDeadLetterService(db(c), c.env, auditContext(c)),
};

const audit: AuditRouteServices = {
  auditEventService: (c) => new AuditEventService(db(c)),
};

/** What each capability's routes are handed, by capability. */
export const routeServices = {
  identity,
  catalog,
  subscriptions,
  entitlements,
  invoicing,
  payments: paymentRoutes,
  credits: creditRoutes,
  creditNotes,
  pricing,
  notifications,
  usage,
  audit,
};
