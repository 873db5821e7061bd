import type { EventProperties } from "@edge-platform/shared/billing/meter";
import type { UsageLogStatus } from "@edge-platform/shared/usage-log/client";

/*
 * The shard's events and archive files as the store hands them out, and the
 * rows they are read from.
 */

/** An event as stored (and as the API and the archive show it). */
export interface StoredEvent {
  id: string;
  tenantId: string;
  eventId: string;
  feature: string;
  amount: number;
  timestamp: string;
  receivedAt: string;
  status: UsageLogStatus;
  reason: string | null;
  message: string | null;
  subscriptionId: string | null;
  periodKey: string | null;
  validatedAt: string | null;
  aggregatedAt: string | null;
  metadata: Record<string, unknown>;
  properties: EventProperties;
}

export interface NewEvent {
  id: string;
  eventId: string;
  feature: string;
  amount: number;
  timestamp: string;
  metadata: Record<string, unknown>;
  /** Absent: none. */
  properties?: EventProperties;
}

/** An event moved in from elsewhere (the D1 log of earlier releases), in any status. */
export interface ImportedEvent extends NewEvent {
  receivedAt: string;
  status: UsageLogStatus;
  reason: string | null;
  message: string | null;
  subscriptionId: string | null;
  periodKey: string | null;
  periodStart: string | null;
  periodEnd: string | null;
  validatedAt: string | null;
  aggregatedAt: string | null;
}

/** The columns `storedEvent` reads (an archive file holds these). */
export interface StoredEventRow extends Record<string, SqlStorageValue> {
  id: string;
  event_id: string;
  feature: string;
  amount: number;
  timestamp: string;
  received_at: string;
  status: string;
  reason: string | null;
  message: string | null;
  subscription_id: string | null;
  period_key: string | null;
  validated_at: string | null;
  aggregated_at: string | null;
  metadata: string;
  properties: string;
}

export interface EventRecord extends StoredEventRow {
  period_start: string | null;
  period_end: string | null;
}

export interface FileRecord extends Record<string, SqlStorageValue> {
  id: number;
  key: string;
  status: string;
  day: string;
  first_id: string;
  last_id: string;
  first_received: string;
  last_received: string;
  events: number;
  /** The earliest event time in the file; null on files finished before it was kept. */
  first_timestamp: string | null;
  last_timestamp: string | null;
}

/** A file as archiving chooses it (its number, status and event times come later). */
export type NewFile = Omit<FileRecord, "id" | "status" | "first_timestamp" | "last_timestamp">;

export function storedEvent(
  tenantId: string,
  row: StoredEventRow,
  metadata: Record<string, unknown> = parsedMetadata(row.metadata),
  properties: EventProperties = parsedProperties(row.properties),
): StoredEvent {
  return {
    id: row.id,
    tenantId,
    eventId: row.event_id,
    feature: row.feature,
    amount: row.amount,
    timestamp: row.timestamp,
    receivedAt: row.received_at,
    status: row.status as UsageLogStatus,
    reason: row.reason,
    message: row.message,
    subscriptionId: row.subscription_id,
    periodKey: row.period_key,
    validatedAt: row.validated_at,
    aggregatedAt: row.aggregated_at,
    metadata,
    properties,
  };
}

export function parsedMetadata(text: string): Record<string, unknown> {
  return JSON.parse(text || "{}") as Record<string, unknown>;
}

export function parsedProperties(text: string | null | undefined): EventProperties {
  return JSON.parse(text || "{}") as EventProperties;
}

/** The statuses an event ends in, as an SQL list: only finished events are archived. */
export const FINISHED = "('AGGREGATED', 'REJECTED')";

/** The events columns of a StoredEventRow. */
export const STORED_EVENT_COLUMNS =
  "id, event_id, feature, amount, timestamp, received_at, status, reason, message, subscription_id, period_key, validated_at, aggregated_at, metadata, properties";

/** An archive file, by its number in `files` and its R2 key. */
export interface FileRef {
  id: number;
  key: string;
}

/**
 * The eventIds of archive files read so far (from R2), by file number: what
 * confirms or refutes a hash hit on an index row with no check (written by
 * an earlier release).
 */
export type FilesRead = ReadonlyMap<number, ReadonlySet<string>>;

/**
 * Either the decision, or the archive files to read before it can be made
 * (a hash hit on an index row of theirs; nothing was written).
 */
export type Decision<T> = { done: T } | { unread: FileRef[] };

/** Where an eventId's event is: hot, or in one of these archive files. */
export type Location =
  | { kind: "hot"; event: StoredEvent }
  | {
      kind: "archived";
      /** Files that may hold it, most likely first; `exact` when indexed by the full eventId or by hash and check. */
      files: { key: string; exact: boolean }[];
    };
