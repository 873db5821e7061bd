import { type ResetWindow, resetWindowAt } from "@edge-platform/shared/billing/billing-period";
import { MAX_USAGE_AMOUNT } from "@edge-platform/shared/billing/entitlement-counter-protocol";
import { subscriptionAccess } from "@edge-platform/shared/billing/entitlement-decision";
import type { SnapshotTerms } from "@edge-platform/shared/billing/entitlement-snapshot";
import { DEFAULT_METER, readEvent } from "@edge-platform/shared/billing/meter";
import type { TenantEntitlementState } from "@edge-platform/shared/db/entitlement-state";
import type { tenantStatuses } from "@edge-platform/shared/db/schema/identity";
import type { UsageEventStatus } from "@edge-platform/shared/db/schema/usage-events";
import {
  type RawUsageMessage,
  rawUsageMessage,
  type UsageWindow,
} from "@edge-platform/shared/queues/usage";

// The validation stage's rules: the nine checks, in order, each failure
// with a stable code (clients read it from GET /usage/events/:eventId) and
// a sentence for people. Pure: the stage loads the rows and hands them in.
//
// Before the checks, the event row's status is looked at (the third layer
// of duplicate protection): only a PENDING event is judged; a delivery of
// an event that was already judged is a duplicate, reported for monitoring
// and never judged again (so a tenant suspended after its event was
// validated cannot undo the validation, and no second dead letter is
// written). A VALIDATED event is forwarded once more, since its first
// forward may be what failed.

export const MAX_FUTURE_DRIFT_MS = 5 * 60_000;
export const MAX_EVENT_AGE_MS = 7 * 86_400_000;

export const REJECTION_CODES = {
  /** 1. id, tenantId, eventId, feature, amount, timestamp, receivedAt present and typed. */
  missingFields: "MISSING_REQUIRED_FIELDS",
  /** 2. eventId is a UUID. */
  invalidEventId: "INVALID_EVENT_ID",
  /** 3. the tenant exists and is ACTIVE. */
  tenantNotFound: "TENANT_NOT_FOUND",
  tenantNotActive: "TENANT_NOT_ACTIVE",
  /** 4. the timestamp parses and lies within [received - 7 days, received + 5 minutes]. */
  invalidTimestamp: "INVALID_TIMESTAMP",
  timestampInFuture: "TIMESTAMP_IN_FUTURE",
  timestampTooOld: "TIMESTAMP_TOO_OLD",
  /** 5. the tenant has a subscription that grants access now. */
  noActiveSubscription: "NO_ACTIVE_SUBSCRIPTION",
  /** 6. the subscription has a snapshot for the feature. */
  featureNotEntitled: "FEATURE_NOT_ENTITLED",
  /** 7. the feature is counted (QUOTA or METERED), not BOOLEAN. */
  booleanFeature: "BOOLEAN_FEATURE",
  /** 8. the amount is a positive integer (at most MAX_USAGE_AMOUNT). */
  invalidAmount: "INVALID_AMOUNT",
  /** 9. the feature's meter can read the event: the property it aggregates is there... */
  propertyMissing: "PROPERTY_MISSING",
  /** ...and is a number where the aggregation needs one. */
  propertyNotNumeric: "PROPERTY_NOT_NUMERIC",
  /** The message names an event row that does not exist (any more). */
  eventNotFound: "EVENT_NOT_FOUND",
} as const;
export type RejectionCode = (typeof REJECTION_CODES)[keyof typeof REJECTION_CODES];

type TenantStatus = (typeof tenantStatuses)[number];

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/** What the stage knows about the event's row. */
export interface StoredEvent {
  id: string;
  tenantId: string;
  status: UsageEventStatus;
  receivedAt: string;
}

export interface ValidationLookups {
  row: StoredEvent | undefined;
  tenant: { status: TenantStatus } | undefined;
  /** The tenant's current subscription and snapshots. */
  entitlements: TenantEntitlementState | undefined;
  now: Date;
}

export type Verdict =
  | { kind: "valid"; message: RawUsageMessage; subscriptionId: string; window: UsageWindow }
  | {
      kind: "rejected";
      code: RejectionCode;
      reason: string;
      /** The parsed message, when check 1 passed. */
      message: RawUsageMessage | undefined;
      /** Whether a PENDING row exists to be marked REJECTED. */
      hasRow: boolean;
    }
  | { kind: "duplicate"; message: RawUsageMessage; status: UsageEventStatus };

function windowOf(window: ResetWindow): UsageWindow {
  return {
    key: window.key,
    start: window.start.toISOString(),
    end: window.end?.toISOString() ?? null,
  };
}

export function judgeRawMessage(
  body: unknown,
  lookups: (message: RawUsageMessage) => ValidationLookups,
): Verdict {
  // 1. Required fields.
  const parsed = rawUsageMessage.safeParse(body);
  if (!parsed.success) {
    const fields = [
      ...new Set(parsed.error.issues.map((issue) => issue.path.map(String).join(".") || "body")),
    ];
    return {
      kind: "rejected",
      code: REJECTION_CODES.missingFields,
      reason: `Missing or malformed required fields: ${fields.join(", ")}`,
      message: undefined,
      hasRow: false,
    };
  }
  const message = parsed.data;
  const { row, tenant, entitlements, now } = lookups(message);
  const reject = (code: RejectionCode, reason: string, hasRow = true): Verdict => ({
    kind: "rejected",
    code,
    reason,
    message,
    hasRow,
  });
  if (!row || row.tenantId !== message.tenantId) {
    return reject(REJECTION_CODES.eventNotFound, `Usage event ${message.id} not found`, false);
  }
  if (row.status !== "PENDING") return { kind: "duplicate", message, status: row.status };

  // 2. eventId format.
  if (!UUID.test(message.eventId)) {
    return reject(
      REJECTION_CODES.invalidEventId,
      `Invalid eventId format: "${message.eventId.slice(0, 100)}" is not a valid UUID`,
    );
  }
  // 3. Tenant.
  if (!tenant)
    return reject(REJECTION_CODES.tenantNotFound, `Tenant ${message.tenantId} not found`);
  if (tenant.status !== "ACTIVE") {
    return reject(
      REJECTION_CODES.tenantNotActive,
      `Tenant ${message.tenantId} is ${tenant.status}, not ACTIVE`,
    );
  }
  // 4. Timestamp, measured from when the event was received.
  const occurred = Date.parse(message.timestamp);
  const received = Date.parse(row.receivedAt);
  if (Number.isNaN(occurred)) {
    return reject(REJECTION_CODES.invalidTimestamp, "Invalid timestamp format");
  }
  if (occurred > received + MAX_FUTURE_DRIFT_MS) {
    return reject(
      REJECTION_CODES.timestampInFuture,
      `Timestamp ${message.timestamp} is more than 5 minutes after the event was received (${row.receivedAt})`,
    );
  }
  if (occurred < received - MAX_EVENT_AGE_MS) {
    return reject(
      REJECTION_CODES.timestampTooOld,
      `Timestamp ${message.timestamp} is more than 7 days before the event was received (${row.receivedAt})`,
    );
  }
  // 5. Subscription.
  const subscription = entitlements?.subscription ?? null;
  const access = subscriptionAccess(subscription, now);
  if (!subscription || access !== "granted") {
    return reject(
      REJECTION_CODES.noActiveSubscription,
      access === "paused"
        ? `Subscription of tenant ${message.tenantId} is paused`
        : `No active subscription for tenant ${message.tenantId}`,
    );
  }
  // 6. Feature in the subscription's snapshots.
  const snapshot = entitlements?.snapshots.get(message.feature);
  if (!snapshot) {
    return reject(
      REJECTION_CODES.featureNotEntitled,
      `Feature "${message.feature}" is not in the subscription's entitlements`,
    );
  }
  // 7. Counted feature.
  if (snapshot.featureType === "BOOLEAN") {
    return reject(
      REJECTION_CODES.booleanFeature,
      `Feature "${message.feature}" is BOOLEAN - usage cannot be recorded against it`,
    );
  }
  // 8. Amount.
  if (
    !Number.isInteger(message.amount) ||
    message.amount < 1 ||
    message.amount > MAX_USAGE_AMOUNT
  ) {
    return reject(
      REJECTION_CODES.invalidAmount,
      `Invalid amount ${message.amount} for ${snapshot.featureType} feature - must be a positive integer of at most ${MAX_USAGE_AMOUNT}`,
    );
  }
  // 9. Readable by the feature's meter.
  const unreadable = meterRejection(snapshot, message);
  if (unreadable) return reject(unreadable.code, unreadable.reason);
  const window = resetWindowAt(subscription, snapshot.resetPeriod ?? "NEVER", new Date(occurred));
  return { kind: "valid", message, subscriptionId: subscription.id, window: windowOf(window) };
}

/**
 * Why the feature's meter cannot read the event (the property it
 * aggregates is missing, or not a number where it must be one), or
 * undefined. An event the meter's filters leave out is not refused: it is
 * valid and counts as nothing.
 */
function meterRejection(
  snapshot: SnapshotTerms,
  message: RawUsageMessage,
): { code: RejectionCode; reason: string } | undefined {
  const reading = readEvent(snapshot.meter ?? DEFAULT_METER, {
    amount: message.amount,
    properties: message.properties ?? {},
  });
  if (reading.counts || reading.reason === "FILTERED") return undefined;
  const code =
    reading.reason === "PROPERTY_MISSING"
      ? REJECTION_CODES.propertyMissing
      : REJECTION_CODES.propertyNotNumeric;
  return { code, reason: `Feature "${message.feature}": ${reading.message}` };
}
