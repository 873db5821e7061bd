import { z } from "zod";
import { featureTypes } from "../db/schema/catalog.ts";
import { MAX_COUNTER_SHARDS } from "./counter-shards.ts";
import type { CheckOutcome } from "./entitlement-decision.ts";
import { eventPropertiesSchema } from "./meter.ts";

// The EntitlementCounter's RPC interface. Inputs are parsed inside the
// object (it is the last line of defence for its counters); results are
// plain data. `nowMs` lets tests place a call in time; HTTP routes never
// pass it.

/** How long a consume's request id and result are remembered: past the key's 24 hours. */
export const CONSUME_REQUEST_RETENTION_MS = 25 * 60 * 60 * 1000;

/** The largest amount one consume or one usage event may add. */
export const MAX_USAGE_AMOUNT = 1_000_000_000;

const tenantId = z.uuid();
const featureKey = z.string().min(1).max(100);
const nowMs = z.number().int().nonnegative().optional();
const isoInstant = z.iso.datetime({ offset: false });
/** The counter shard the call is for (shared/src/billing/counter-shards.ts); absent: shard 0. */
const shard = z
  .number()
  .int()
  .min(0)
  .max(MAX_COUNTER_SHARDS - 1)
  .optional();
/** A counter shard other than 0 (what shard 0 hears from, and takes leases back from). */
const otherShard = z
  .number()
  .int()
  .min(1)
  .max(MAX_COUNTER_SHARDS - 1);

export const checkInput = z.strictObject({ tenantId, featureKey, nowMs, shard });
export type CheckInput = z.input<typeof checkInput>;

/** A consume's event properties (the feature's meter reads them; shared/src/billing/meter.ts). */
const consumeProperties = z
  .record(z.string().max(64), z.union([z.string().max(256), z.number()]))
  .optional();

export const consumeInput = z.strictObject({
  tenantId,
  featureKey,
  amount: z.number().int().positive().max(MAX_USAGE_AMOUNT),
  properties: consumeProperties,
  nowMs,
  /**
   * Idempotency: the object remembers the result of a consume with a
   * request id (CONSUME_REQUEST_RETENTION_MS) and answers a repeat with it,
   * taking no units, decided in the same synchronous step as the count.
   * The billing worker derives it from the caller, the Idempotency-Key and
   * the key's creation time.
   */
  requestId: z.string().min(1).max(255).optional(),
  shard,
});
export type ConsumeInput = z.input<typeof consumeInput>;

/** How long a keyed consume's answer is replayed: the Idempotency-Key's 24 hours. */
export const KEYED_CONSUME_TTL_MS = 24 * 60 * 60 * 1000;

/**
 * A consume sent with an Idempotency-Key. The object keeps the key's whole
 * record next to the count, written in the same synchronous step as the
 * units (one storage write, no D1 round trip): the first answer is
 * replayed for KEYED_CONSUME_TTL_MS, a repeat with another `requestHash`
 * is refused, and a repeat while the first is still being decided is told
 * so rather than waiting.
 */
export const keyedConsumeInput = z.strictObject({
  tenantId,
  featureKey,
  amount: z.number().int().positive().max(MAX_USAGE_AMOUNT),
  properties: consumeProperties,
  /** The caller and its Idempotency-Key (the billing worker hashes the two). */
  requestId: z.string().min(1).max(255),
  /** The request's fingerprint (method, path, tenant, body): same key, other fingerprint is a conflict. */
  requestHash: z.string().min(1).max(128),
  /** The caller's clock (epoch ms) when the request came in: expiry, and the replayed answer's time. */
  atMs: z.number().int().nonnegative(),
  /** The first request's correlation id, replayed with its answer. */
  correlationId: z.string().min(1).max(100),
  shard,
});
export type KeyedConsumeInput = z.input<typeof keyedConsumeInput>;

export type KeyedConsumeResult =
  | {
      kind: "answered";
      result: ConsumeResult;
      /** True when this is the stored answer of an earlier request with the key. */
      replayed: boolean;
      /** The first request's correlation id and time, so a replay renders the same answer. */
      correlationId: string;
      atMs: number;
    }
  /** The first request with the key is still being decided. */
  | { kind: "in_flight" }
  /** The key was used with another request (other fingerprint). */
  | { kind: "key_reused" };

/**
 * Usage that was already accepted elsewhere (the usage pipeline): counted,
 * never refused, each `eventId` once. The window is resolved by the caller
 * from the event's subscription, snapshot and timestamp with
 * `resetWindowAt` (domain/billing-period.ts), the same function the object
 * uses for consumes, so both land in the same counter.
 */
export const usageEntry = z.strictObject({
  eventId: z.string().min(1).max(255),
  subscriptionId: z.uuid(),
  featureKey,
  periodKey: z.string().min(1).max(40),
  periodStart: isoInstant,
  periodEnd: isoInstant.nullable(),
  amount: z.number().int().positive().max(MAX_USAGE_AMOUNT),
  occurredAt: isoInstant,
  /**
   * The logged event the entry counts (the pipeline passes its id). The
   * flush claims that event in its usage-log shard before the aggregate
   * increment and adds only the units of events it actually claimed;
   * units of an event it could not claim are taken back out of the
   * counter (billing: usage-log/flush-claims.ts).
   */
  usageEventId: z.uuid().optional(),
  /** The event's properties, for its feature's meter; absent stands for none. */
  properties: eventPropertiesSchema.optional(),
});
export type UsageEntry = z.infer<typeof usageEntry>;

export const recordInput = z.strictObject({
  tenantId,
  entries: z.array(usageEntry).min(1).max(1000),
  shard,
});
export type RecordInput = z.input<typeof recordInput>;

export const flushInput = z.strictObject({ tenantId, shard });
export type FlushInput = z.input<typeof flushInput>;

export const creditsInput = z.strictObject({ tenantId, nowMs });
export type CreditsInput = z.input<typeof creditsInput>;

export const settleGrantInput = z.strictObject({
  tenantId,
  grantId: z.uuid(),
  status: z.enum(["VOIDED", "EXPIRED"]),
});
export type SettleGrantInput = z.input<typeof settleGrantInput>;

/** Each grant the object knows, with the cents it has left (exact: the object draws them). */
export interface CreditsResult {
  grants: { id: string; remaining: number; status: string }[];
}

export type CheckResult = CheckOutcome;

const featureType = z.enum(featureTypes);

export const consumeResult = z.discriminatedUnion("status", [
  z.object({
    status: z.literal("consumed"),
    feature: z.string(),
    type: featureType,
    consumed: z.number(),
    used: z.number(),
    limit: z.number(),
    remaining: z.number(),
    overage: z.boolean(),
    resetAt: z.string().nullable(),
  }),
  z.object({ status: z.literal("denied"), feature: z.string(), reason: z.string() }),
  z.object({ status: z.literal("not_consumable"), feature: z.string() }),
  z.object({
    status: z.literal("quota_exceeded"),
    feature: z.string(),
    limit: z.number(),
    used: z.number(),
    requested: z.number(),
  }),
  z.object({ status: z.literal("counter_overflow"), feature: z.string(), used: z.number() }),
  /** The feature's meter cannot read the consume's properties (a property it needs is missing). */
  z.object({ status: z.literal("invalid_properties"), feature: z.string(), message: z.string() }),
  /** A prepaid subscription's credit balance cannot pay for the units: nothing taken or drawn. */
  z.object({
    status: z.literal("credits_exhausted"),
    feature: z.string(),
    requested: z.number(),
    /** Cents the units would cost. */
    cost: z.number(),
    /** Cents of credit that apply to the feature. */
    creditBalance: z.number(),
  }),
]);
export type ConsumeResult = z.infer<typeof consumeResult>;

export interface RecordResult {
  recorded: number;
  duplicates: number;
}

/*
 * Between counter shards (see counter-shards.ts): a shard other than 0
 * reports a window's figures to shard 0 as running totals, each report
 * numbered (`seq`), so a late or repeated one changes nothing.
 */
const count = z.number().int().min(-Number.MAX_SAFE_INTEGER).max(Number.MAX_SAFE_INTEGER);
const cumulative = z.number().int().nonnegative().max(Number.MAX_SAFE_INTEGER);
export const shardReport = z.strictObject({
  subscriptionId: z.uuid(),
  featureKey,
  periodKey: z.string().min(1).max(40),
  periodStart: isoInstant,
  periodEnd: isoInstant.nullable(),
  seq: cumulative,
  /** Every unit the shard counted in the window (less units taken back); its lease covers them. */
  counted: count,
  /** Lease units the shard gave back unused. */
  returned: cumulative,
  /** Lease units the shard received. */
  received: cumulative,
  /** Lease units the shard asks for (0: none). */
  want: cumulative.max(MAX_USAGE_AMOUNT),
});
export type ShardReport = z.infer<typeof shardReport>;

export const shardSyncInput = z.strictObject({
  tenantId,
  shard: otherShard,
  windows: z.array(shardReport).min(1).max(1000),
});
export type ShardSyncInput = z.input<typeof shardSyncInput>;

/** Per reported window: the tenant's total in it (the report included) and the lease units granted now. */
export interface ShardSyncResult {
  windows: { featureKey: string; periodKey: string; total: number; granted: number }[];
}

export const returnLeasesInput = z.strictObject({
  tenantId,
  shard: otherShard,
  windows: z.array(z.strictObject({ featureKey, periodKey: z.string().min(1).max(40) })).max(1000),
});
export type ReturnLeasesInput = z.input<typeof returnLeasesInput>;

export interface FlushResult {
  /** Flushes written to D1 by this call. */
  flushes: number;
  units: number;
  /** Units still waiting (arrived during the call). */
  pendingUnits: number;
}

/**
 * The counter object's RPC surface. The billing worker's EntitlementCounter
 * implements it; callers in other workers (the usage pipeline) reach it
 * through entitlementCounter() without depending on the class.
 */
export interface EntitlementCounterRpc {
  check(input: CheckInput): Promise<CheckResult>;
  consume(input: ConsumeInput): Promise<ConsumeResult>;
  consumeKeyed(input: KeyedConsumeInput): Promise<KeyedConsumeResult>;
  record(input: RecordInput): Promise<RecordResult>;
  /** Shard 0 passes it on to the other shards it knows. */
  refreshEntitlements(): Promise<void>;
  flush(input: FlushInput): Promise<FlushResult>;
  refreshCredits(): Promise<void>;
  credits(input: CreditsInput): Promise<CreditsResult>;
  /** Ends a grant (void or expiry): the cents it held, to write off; null when the object never saw it. */
  settleCreditGrant(input: SettleGrantInput): Promise<number | null>;
  /** Shard 0: a shard's report, answered with the totals and any lease granted. */
  syncShard(input: ShardSyncInput): Promise<ShardSyncResult>;
  /** A shard other than 0: gives back its unused lease units, answering its reports. */
  returnLeases(input: ReturnLeasesInput): Promise<ShardReport[]>;
}
