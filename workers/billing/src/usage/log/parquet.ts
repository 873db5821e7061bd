import type { EventProperties } from "@edge-platform/shared/billing/meter";
import {
  type UsageEventStatus,
  usageEventStatuses,
} from "@edge-platform/shared/db/schema/usage-events";
import {
  type AsyncBuffer,
  type ParquetQueryFilter,
  parquetMetadata,
  parquetMetadataAsync,
  parquetReadObjects,
  type SchemaElement,
} from "hyparquet";
import { parquetWriteBuffer } from "hyparquet-writer";

/*
 * The usage archive's file format: one Parquet file holds a batch of one
 * tenant's events, one row per event, sorted by (timestamp, eventId), so
 * any Parquet reader (DuckDB, R2 SQL, Spark, pandas) can aggregate them
 * and a time-range read skips whole row groups by their min/max statistics.
 * The row is the event as `GET /usage/events/{eventId}` returns it, with
 * the tenant added; columns are snake_case. Columns are only ever added at
 * the end (LATER_COLUMNS), so files of earlier releases stay readable.
 */

/** One archived event: the public usage event body plus its tenant. */
export interface ArchivedUsageEvent {
  id: string;
  tenantId: string;
  eventId: string;
  feature: string;
  /** An integer (stored as INT64, read back as a number). */
  amount: number;
  /** ISO-8601 in UTC with milliseconds (`toISOString`), as every time below. */
  timestamp: string;
  receivedAt: string;
  status: UsageEventStatus;
  reason: string | null;
  message: string | null;
  subscriptionId: string | null;
  periodKey: string | null;
  validatedAt: string | null;
  aggregatedAt: string | null;
  metadata: Record<string, unknown>;
  properties: EventProperties;
}

type ColumnKind = "STRING" | "INT64" | "TIMESTAMP" | "JSON";

export interface UsageEventsParquetColumn {
  /** The Parquet column name. */
  column: string;
  /** The ArchivedUsageEvent field it holds. */
  field: keyof ArchivedUsageEvent;
  /** Logical type: STRING (UTF8 byte array), INT64, TIMESTAMP (INT64 milliseconds, UTC), JSON (UTF8 JSON text). */
  type: ColumnKind;
  nullable: boolean;
  description: string;
}

/**
 * The archive files' schema, in column order. Documentation and tests read
 * this constant; the writer builds the Parquet schema from it.
 */
export const USAGE_EVENTS_PARQUET_SCHEMA: readonly UsageEventsParquetColumn[] = [
  {
    column: "tenant_id",
    field: "tenantId",
    type: "STRING",
    nullable: false,
    description: "The tenant",
  },
  {
    column: "id",
    field: "id",
    type: "STRING",
    nullable: false,
    description: "The platform's id of the event",
  },
  {
    column: "event_id",
    field: "eventId",
    type: "STRING",
    nullable: false,
    description: "The client's eventId (unique per tenant)",
  },
  {
    column: "feature",
    field: "feature",
    type: "STRING",
    nullable: false,
    description: "Feature key",
  },
  {
    column: "amount",
    field: "amount",
    type: "INT64",
    nullable: false,
    description: "Units used (integer)",
  },
  {
    column: "timestamp",
    field: "timestamp",
    type: "TIMESTAMP",
    nullable: false,
    description: "When the usage happened (client time)",
  },
  {
    column: "received_at",
    field: "receivedAt",
    type: "TIMESTAMP",
    nullable: false,
    description: "When the platform accepted the event",
  },
  {
    column: "status",
    field: "status",
    type: "STRING",
    nullable: false,
    description: `One of ${usageEventStatuses.join(", ")}`,
  },
  {
    column: "reason",
    field: "reason",
    type: "STRING",
    nullable: true,
    description: "Rejection code of a REJECTED event",
  },
  {
    column: "message",
    field: "message",
    type: "STRING",
    nullable: true,
    description: "Rejection message of a REJECTED event",
  },
  {
    column: "subscription_id",
    field: "subscriptionId",
    type: "STRING",
    nullable: true,
    description: "The subscription the event counted towards",
  },
  {
    column: "period_key",
    field: "periodKey",
    type: "STRING",
    nullable: true,
    description: "The billing period it counted in",
  },
  {
    column: "validated_at",
    field: "validatedAt",
    type: "TIMESTAMP",
    nullable: true,
    description: "When validation accepted it",
  },
  {
    column: "aggregated_at",
    field: "aggregatedAt",
    type: "TIMESTAMP",
    nullable: true,
    description: "When it was added to usage_aggregates",
  },
  {
    column: "metadata",
    field: "metadata",
    type: "JSON",
    nullable: false,
    description: "The event's metadata object as JSON text",
  },
  {
    column: "properties",
    field: "properties",
    type: "JSON",
    nullable: false,
    description: "The event's properties object as JSON text ({} when it had none)",
  },
];

/**
 * Columns added after the first files were written, with what they read
 * as in a file that lacks them (its events predate them).
 */
const LATER_COLUMNS: ReadonlyMap<string, () => unknown> = new Map([["properties", () => ({})]]);

/**
 * Rows per row group. A time-range read skips row groups by their
 * timestamp statistics, so groups stay small; larger ones would shrink the
 * footer of very large files, which archive batches do not reach.
 */
export const USAGE_EVENTS_ROW_GROUP_SIZE = 2_000;

const TIME_FIELDS = new Set<keyof ArchivedUsageEvent>([
  "timestamp",
  "receivedAt",
  "validatedAt",
  "aggregatedAt",
]);

export class UsageEventsParquetError extends Error {}

function parquetSchemaElements(): SchemaElement[] {
  return [
    { name: "root", num_children: USAGE_EVENTS_PARQUET_SCHEMA.length },
    ...USAGE_EVENTS_PARQUET_SCHEMA.map((column) => {
      const repetition_type = column.nullable ? ("OPTIONAL" as const) : ("REQUIRED" as const);
      switch (column.type) {
        case "STRING":
          return {
            name: column.column,
            type: "BYTE_ARRAY" as const,
            converted_type: "UTF8" as const,
            logical_type: { type: "STRING" as const },
            repetition_type,
          };
        case "INT64":
          return { name: column.column, type: "INT64" as const, repetition_type };
        case "TIMESTAMP":
          return {
            name: column.column,
            type: "INT64" as const,
            converted_type: "TIMESTAMP_MILLIS" as const,
            logical_type: {
              type: "TIMESTAMP" as const,
              isAdjustedToUTC: true,
              unit: "MILLIS" as const,
            },
            repetition_type,
          };
        default:
          return {
            name: column.column,
            type: "BYTE_ARRAY" as const,
            converted_type: "JSON" as const,
            logical_type: { type: "JSON" as const },
            repetition_type,
          };
      }
    }),
  ];
}

/**
 * `toISOString` output on a day every month has (01 to 28): such a string
 * parses to the instant it names and nothing else, so the round trip below
 * is needed only for the rest.
 */
const PLAIN_ISO_TIME =
  /^\d{4}-(?:0[1-9]|1[0-2])-(?:0[1-9]|1\d|2[0-8])T(?:[01]\d|2[0-3]):[0-5]\d:[0-5]\d\.\d{3}Z$/;

/** Milliseconds of a canonical ISO string; anything `toISOString` would not give back is refused, so the round trip is exact. */
function checkedMillis(value: string, field: string, eventId: string): number {
  const millis = Date.parse(value);
  if (
    Number.isNaN(millis) ||
    (!PLAIN_ISO_TIME.test(value) && new Date(millis).toISOString() !== value)
  ) {
    throw new UsageEventsParquetError(
      `${field} of event ${eventId} is not an ISO-8601 UTC time with milliseconds: ${value}`,
    );
  }
  return millis;
}

const utf8 = new TextEncoder();

/**
 * A string column as UTF-8 bytes, ASCII strings encoded in one call. A
 * column of repeating strings encodes each distinct one once and its rows
 * share it (the writer's dictionary then keys repeats by identity). Left
 * to the writer, every row was encoded and hashed on its own, which took a
 * third of a file's encoding.
 */
function utf8Column(values: readonly (string | null)[], repeating: boolean): (Uint8Array | null)[] {
  if (!repeating) {
    const strings = values.map((value) => value ?? "");
    const bytes = asciiBytes(strings);
    return values.map((value, index) =>
      value === null ? null : (bytes?.[index] ?? utf8.encode(value)),
    );
  }
  const distinct = [...new Set(values)].filter((value) => value !== null);
  const bytes = asciiBytes(distinct);
  const bytesOf = new Map(
    distinct.map((value, index) => [value, bytes?.[index] ?? utf8.encode(value)]),
  );
  return values.map((value) => (value === null ? null : (bytesOf.get(value) ?? null)));
}

/** Views of one encoding of the strings joined, or null when some are not ASCII. */
function asciiBytes(strings: readonly string[]): Uint8Array[] | null {
  const joined = strings.join("");
  const all = utf8.encode(joined);
  if (all.length !== joined.length) return null;
  let offset = 0;
  return strings.map((value) => {
    const view = all.subarray(offset, offset + value.length);
    offset += value.length;
    return view;
  });
}

/**
 * Write options by column, where the writer's defaults (dictionary when it
 * pays, Snappy, min/max statistics) do not serve. The id columns are unique
 * per row: a dictionary and statistics cost time and buy nothing there
 * (every row group spans nearly the whole range of the clients' random
 * eventIds), so they are written plain. The eventIds are not compressed
 * either, since random ids do not compress; our time-ordered ids share
 * prefixes, which Snappy takes to two thirds. Free text nobody prunes by
 * carries no statistics.
 */
const COLUMN_WRITE_OPTIONS: Partial<
  Record<
    keyof ArchivedUsageEvent,
    { encoding?: "PLAIN"; codec?: "UNCOMPRESSED"; statistics: false }
  >
> = {
  id: { encoding: "PLAIN", statistics: false },
  eventId: { encoding: "PLAIN", codec: "UNCOMPRESSED", statistics: false },
  reason: { statistics: false },
  message: { statistics: false },
  metadata: { statistics: false },
  properties: { statistics: false },
};

function compareRows(
  a: { timestamp: number; eventId: string },
  b: { timestamp: number; eventId: string },
): number {
  if (a.timestamp !== b.timestamp) return a.timestamp - b.timestamp;
  return a.eventId < b.eventId ? -1 : a.eventId > b.eventId ? 1 : 0;
}

/**
 * One Parquet file (Snappy-compressed) with the events sorted by
 * (timestamp, eventId). Throws UsageEventsParquetError on a
 * value the format cannot hold exactly (a non-integer amount, a time that
 * is not a canonical ISO string).
 */
export function encodeUsageEventsParquet(events: readonly ArchivedUsageEvent[]): ArrayBuffer {
  // A file's events share most of their times (received, validated and
  // aggregated in batches): each distinct string is checked once.
  const millisOf = new Map<string, number>();
  const canonicalMillis = (value: string, field: string, eventId: string): number => {
    let millis = millisOf.get(value);
    if (millis === undefined) {
      millis = checkedMillis(value, field, eventId);
      millisOf.set(value, millis);
    }
    return millis;
  };
  const order = events.map((event, index) => {
    if (!Number.isSafeInteger(event.amount)) {
      throw new UsageEventsParquetError(
        `amount of event ${event.eventId} is not a safe integer: ${event.amount}`,
      );
    }
    return {
      index,
      timestamp: canonicalMillis(event.timestamp, "timestamp", event.eventId),
      eventId: event.eventId,
    };
  });
  order.sort(compareRows);
  const sorted = order.map(({ index }) => events[index] as ArchivedUsageEvent);
  const columnData = USAGE_EVENTS_PARQUET_SCHEMA.map((column) => {
    let data: unknown[];
    if (column.field === "timestamp") {
      data = order.map(({ timestamp }) => BigInt(timestamp));
    } else if (column.type === "TIMESTAMP") {
      data = sorted.map((event) => {
        const value = event[column.field] as string | null;
        return value === null ? null : BigInt(canonicalMillis(value, column.field, event.eventId));
      });
    } else if (column.type === "INT64") {
      data = sorted.map((event) => BigInt(event[column.field] as number));
    } else if (column.type === "STRING") {
      data = utf8Column(
        sorted.map((event) => event[column.field] as string | null),
        COLUMN_WRITE_OPTIONS[column.field]?.encoding !== "PLAIN",
      );
    } else {
      data = sorted.map((event) => event[column.field]);
    }
    return { name: column.column, data, ...COLUMN_WRITE_OPTIONS[column.field] };
  });
  return parquetWriteBuffer({
    columnData,
    schema: parquetSchemaElements(),
    rowGroupSize: USAGE_EVENTS_ROW_GROUP_SIZE,
    kvMetadata: [{ key: "edge-platform.schema", value: "usage-events/2" }],
    createdBy: "edge-platform billing usage archive",
  });
}

type ParquetFile = ArrayBuffer | AsyncBuffer;

function toArchivedEvent(row: Record<string, unknown>): ArchivedUsageEvent {
  const event: Record<string, unknown> = {};
  for (const column of USAGE_EVENTS_PARQUET_SCHEMA) {
    const value = row[column.column];
    if (value === undefined && LATER_COLUMNS.has(column.column)) {
      event[column.field] = LATER_COLUMNS.get(column.column)?.();
    } else if (value === null || value === undefined) {
      event[column.field] = null;
    } else if (TIME_FIELDS.has(column.field)) {
      event[column.field] = (value as Date).toISOString();
    } else if (column.type === "INT64") {
      event[column.field] = Number(value as bigint);
    } else {
      event[column.field] = value;
    }
  }
  return event as unknown as ArchivedUsageEvent;
}

function checkSchema(
  file: ArrayBuffer | AsyncBuffer,
  metadata: ReturnType<typeof parquetMetadata>,
): void {
  const names = metadata.schema.slice(1).map((element) => element.name);
  const expected = USAGE_EVENTS_PARQUET_SCHEMA.map((column) => column.column);
  // An earlier release's file has the same columns, less some added since.
  const known =
    names.join(",") === expected.slice(0, names.length).join(",") &&
    expected.slice(names.length).every((column) => LATER_COLUMNS.has(column));
  if (!known) {
    throw new UsageEventsParquetError(
      `not a usage events file (${file.byteLength} bytes): columns ${names.join(", ")}`,
    );
  }
}

async function readRows(
  file: ParquetFile,
  filter?: ParquetQueryFilter,
): Promise<ArchivedUsageEvent[]> {
  let metadata: ReturnType<typeof parquetMetadata>;
  try {
    metadata =
      file instanceof ArrayBuffer ? parquetMetadata(file) : await parquetMetadataAsync(file);
  } catch (error) {
    throw new UsageEventsParquetError(`not a Parquet file: ${(error as Error).message}`);
  }
  checkSchema(file, metadata);
  const rows = await parquetReadObjects({
    file,
    metadata,
    ...(filter ? { filter, useBloomFilters: true } : {}),
  });
  return rows.map(toArchivedEvent);
}

/** Every event of a file, in the file's order (timestamp, eventId). */
export function decodeUsageEventsParquet(file: ArrayBuffer): Promise<ArchivedUsageEvent[]> {
  return readRows(file);
}

/**
 * One event by its client eventId, or null. Reads the footer, then the
 * row groups (a file written by an earlier release has event_id statistics
 * and bloom filters, which skip some). `file` may be an AsyncBuffer over
 * ranged reads of an R2 object. Files carry neither now: hashing every
 * eventId took about a third of the time to write a file, in the object
 * that ingests, random ids give min/max statistics nothing to skip, and a
 * lookup by eventId is rare and already narrowed to one file by the log's
 * index.
 */
export async function findUsageEventInParquet(
  file: ParquetFile,
  eventId: string,
): Promise<ArchivedUsageEvent | null> {
  const rows = await readRows(file, { event_id: { $eq: eventId } });
  return rows[0] ?? null;
}

export interface UsageEventsParquetQuery {
  /** Inclusive lower bound on timestamp (ISO). */
  from?: string;
  /** Exclusive upper bound on timestamp (ISO). */
  to?: string;
  feature?: string;
  status?: UsageEventStatus;
}

/**
 * The events of a file matching a query, in (timestamp, eventId) order.
 * Row groups outside the time range or without the feature or status are
 * skipped by their statistics.
 */
export function queryUsageEventsParquet(
  file: ParquetFile,
  query: UsageEventsParquetQuery,
): Promise<ArchivedUsageEvent[]> {
  const clauses: ParquetQueryFilter[] = [];
  if (query.from !== undefined) clauses.push({ timestamp: { $gte: new Date(query.from) } });
  if (query.to !== undefined) clauses.push({ timestamp: { $lt: new Date(query.to) } });
  if (query.feature !== undefined) clauses.push({ feature: { $eq: query.feature } });
  if (query.status !== undefined) clauses.push({ status: { $eq: query.status } });
  return readRows(file, clauses.length === 0 ? undefined : { $and: clauses });
}
