import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import type { EventProperties } from "@edge-platform/shared/billing/meter";
import { parquetWriteBuffer } from "hyparquet-writer";
import { afterAll, describe, expect, it } from "vitest";
import {
  type ArchivedUsageEvent,
  encodeUsageEventsParquet,
  USAGE_EVENTS_PARQUET_SCHEMA,
} from "../../workers/billing/src/usage/log/parquet.ts";
import { queryParquet } from "./duckdb.ts";
import { readLocalR2Objects, withLocalR2Bucket } from "./local-r2.ts";

const TENANT = "0b7e3c1a-55d2-4f0e-8a61-2d4b9c7e1f30";
const OTHER_TENANT = "9f2d4e6a-1b3c-4d5e-8f70-a1b2c3d4e5f6";
const SUBSCRIPTIONS = ["sub-a", "sub-b", "sub-c"];
const FEATURES = ["api_calls", "storage_gb"];
const PERIODS = ["2026-10", "2026-11"];
const STATUSES = ["AGGREGATED", "AGGREGATED", "AGGREGATED", "REJECTED", "VALIDATED"] as const;

function randomEvents(tenantId: string, count: number, dayStart: number): ArchivedUsageEvent[] {
  return Array.from({ length: count }, (_, index) => {
    const timestamp = new Date(dayStart + Math.floor(Math.random() * 86_400_000)).toISOString();
    const status = STATUSES[index % STATUSES.length] ?? "AGGREGATED";
    const counted = status !== "REJECTED";
    const pick = <T>(items: readonly T[]) => items[Math.floor(Math.random() * items.length)] as T;
    return {
      id: crypto.randomUUID(),
      tenantId,
      eventId: crypto.randomUUID(),
      feature: pick(FEATURES),
      amount: Math.floor(Math.random() * 1_000_000) - 1_000,
      timestamp,
      receivedAt: timestamp,
      status,
      reason: counted ? null : "FEATURE_NOT_ENTITLED",
      message: counted ? null : "feature is not in the plan",
      subscriptionId: counted ? pick(SUBSCRIPTIONS) : null,
      periodKey: counted ? pick(PERIODS) : null,
      validatedAt: counted ? timestamp : null,
      aggregatedAt: status === "AGGREGATED" ? timestamp : null,
      metadata: { index },
      properties: (index % 3 === 0
        ? {}
        : { region: pick(["eu", "us"]), tokens: index * 1.5 }) as EventProperties,
    };
  });
}

/** A file as a release before the properties column wrote it. */
function earlierReleaseFile(events: ArchivedUsageEvent[]): ArrayBuffer {
  const kinds = { STRING: "STRING", INT64: "INT64", TIMESTAMP: "TIMESTAMP", JSON: "JSON" } as const;
  return parquetWriteBuffer({
    columnData: USAGE_EVENTS_PARQUET_SCHEMA.filter((column) => column.column !== "properties").map(
      (column) => ({
        name: column.column,
        type: kinds[column.type],
        nullable: column.nullable,
        data: events.map((event) => {
          const value = event[column.field];
          if (value === null) return null;
          if (column.type === "TIMESTAMP") return new Date(value as string);
          if (column.type === "INT64") return BigInt(value as number);
          return value;
        }),
      }),
    ),
  });
}

/** What usage_aggregates holds for these events: AGGREGATED amounts per (subscription, feature, period). */
function jsSums(events: ArchivedUsageEvent[]) {
  const sums = new Map<string, number>();
  for (const event of events) {
    if (event.status !== "AGGREGATED") continue;
    const key = `${event.subscriptionId}|${event.feature}|${event.periodKey}`;
    sums.set(key, (sums.get(key) ?? 0) + event.amount);
  }
  return [...sums]
    .map(([key, amount]) => {
      const [subscription_id, feature, period_key] = key.split("|");
      return { subscription_id, feature, period_key, amount };
    })
    .sort((a, b) =>
      `${a.subscription_id}|${a.feature}|${a.period_key}` <
      `${b.subscription_id}|${b.feature}|${b.period_key}`
        ? -1
        : 1,
    );
}

const SUMS_SQL = `
  select subscription_id, feature, period_key, sum(amount) as amount
  from usage_events where status = 'AGGREGATED'
  group by all order by subscription_id, feature, period_key`;

const stateDirs: string[] = [];
afterAll(() => {
  for (const dir of stateDirs) rmSync(dir, { recursive: true, force: true });
});

describe("DuckDB read-back of the usage archive", () => {
  it("sums a tenant's Parquet files per (subscription, feature, period) exactly as JavaScript does", async () => {
    const day = Date.parse("2026-11-20T00:00:00.000Z");
    const files = [0, 1, 2].map((part) => {
      const events = randomEvents(TENANT, 3_000, day + part * 86_400_000);
      const date = new Date(day + part * 86_400_000).toISOString().slice(0, 10);
      return {
        key: `usage/tenant=${TENANT}/date=${date}/shard-0-${part}.parquet`,
        events,
        bytes: encodeUsageEventsParquet(events),
      };
    });
    const all = files.flatMap((file) => file.events);
    const rows = await queryParquet(files, SUMS_SQL);
    expect(rows).toEqual(jsSums(all));
    expect(rows.length).toBe(SUBSCRIPTIONS.length * FEATURES.length * PERIODS.length);
    const [counts] = await queryParquet(
      files,
      "select count(*) as events, count(distinct event_id) as ids, min(timestamp) as first from usage_events",
    );
    expect(counts).toEqual({
      events: all.length,
      ids: all.length,
      first: new Date(all.map((event) => event.timestamp).sort()[0] as string),
    });
  });

  it("reads every column as the documented types, values equal to the events", async () => {
    const [event] = randomEvents(TENANT, 1, Date.parse("2026-11-20T00:00:00.000Z"));
    const file = {
      key: "one.parquet",
      bytes: encodeUsageEventsParquet([event as ArchivedUsageEvent]),
    };
    const types = await queryParquet(
      [file],
      "select column_name, column_type from (describe usage_events)",
    );
    expect(
      Object.fromEntries(types.map((row) => [row.column_name, row.column_type])),
    ).toMatchObject({
      tenant_id: "VARCHAR",
      amount: "BIGINT",
      timestamp: "TIMESTAMP WITH TIME ZONE",
      received_at: "TIMESTAMP WITH TIME ZONE",
      metadata: "JSON",
      properties: "JSON",
    });
    const [row] = await queryParquet(
      [file],
      "select event_id, amount, timestamp, metadata, properties from usage_events",
    );
    expect(row).toEqual({
      event_id: event?.eventId,
      amount: event?.amount,
      timestamp: new Date(event?.timestamp as string),
      metadata: JSON.stringify(event?.metadata),
      properties: JSON.stringify(event?.properties),
    });
  });

  it("reads properties across files with and without the column (union_by_name)", async () => {
    const day = Date.parse("2026-11-20T00:00:00.000Z");
    const older = randomEvents(TENANT, 50, day).map(
      (event): ArchivedUsageEvent => ({ ...event, properties: {} }),
    );
    const newer = randomEvents(TENANT, 60, day + 86_400_000);
    const files = [
      {
        key: `usage/tenant=${TENANT}/date=2026-11-20/shard-0-a.parquet`,
        bytes: earlierReleaseFile(older),
      },
      {
        key: `usage/tenant=${TENANT}/date=2026-11-21/shard-0-b.parquet`,
        bytes: encodeUsageEventsParquet(newer),
      },
    ];
    const rows = await queryParquet(
      files,
      `select coalesce(properties ->> 'region', '-') as region, count(*) as events
         from read_parquet('usage/tenant=${TENANT}/*/*.parquet', union_by_name = true)
        group by 1 order by 1`,
    );
    const regions = new Map<string, number>();
    for (const event of [...older, ...newer]) {
      const region = String(event.properties.region ?? "-");
      regions.set(region, (regions.get(region) ?? 0) + 1);
    }
    expect(rows).toEqual(
      [...regions]
        .sort(([a], [b]) => (a < b ? -1 : 1))
        .map(([region, events]) => ({ region, events })),
    );
  });

  it("gets a tenant's files out of a local R2 bucket's persisted state, and only that tenant's", async () => {
    const persistTo = mkdtempSync(path.join(tmpdir(), "local-r2-test-"));
    stateDirs.push(persistTo);
    const day = Date.parse("2026-11-21T00:00:00.000Z");
    const mine = [randomEvents(TENANT, 500, day), randomEvents(TENANT, 700, day)];
    const theirs = randomEvents(OTHER_TENANT, 400, day);
    await withLocalR2Bucket(persistTo, "usage-archive", async (bucket) => {
      await bucket.put(
        `usage/tenant=${TENANT}/date=2026-11-21/shard-0-a.parquet`,
        encodeUsageEventsParquet(mine[0] ?? []),
      );
      await bucket.put(
        `usage/tenant=${TENANT}/date=2026-11-21/shard-1-b.parquet`,
        encodeUsageEventsParquet(mine[1] ?? []),
      );
      await bucket.put(
        `usage/tenant=${OTHER_TENANT}/date=2026-11-21/shard-0-c.parquet`,
        encodeUsageEventsParquet(theirs),
      );
    });
    const objects = await readLocalR2Objects(persistTo, "usage-archive", `usage/tenant=${TENANT}/`);
    expect(objects.map((object) => object.key)).toEqual([
      `usage/tenant=${TENANT}/date=2026-11-21/shard-0-a.parquet`,
      `usage/tenant=${TENANT}/date=2026-11-21/shard-1-b.parquet`,
    ]);
    expect(await queryParquet(objects, SUMS_SQL)).toEqual(jsSums(mine.flat()));
    const [tenants] = await queryParquet(
      objects,
      "select list(distinct tenant_id) as tenants from usage_events",
    );
    expect(tenants).toEqual({ tenants: [TENANT] });
  }, 60_000);
});

describe("the documented archive format (docs/billing.md)", () => {
  const docs = readFileSync(path.join(import.meta.dirname, "../../docs/billing.md"), "utf8");
  const start = docs.indexOf("### The archive: Parquet files in R2");
  const section = docs.slice(start, docs.indexOf("\n### ", start + 1));

  it("lists exactly the columns the files have, with their types and nulls", () => {
    const documented = section
      .split("\n")
      .filter((line) => line.startsWith("| `"))
      .map((line) => line.split("|").map((cell) => cell.trim()))
      .map(([, column, type]) => [column, type]);
    const documentedType = {
      STRING: "STRING",
      INT64: "INT64",
      TIMESTAMP: "TIMESTAMP (ms, UTC)",
      JSON: "JSON (STRING)",
    } as const;
    expect(Object.fromEntries(documented)).toEqual(
      Object.fromEntries(
        USAGE_EVENTS_PARQUET_SCHEMA.map((column) => [
          `\`${column.column}\``,
          `${documentedType[column.type]}${column.nullable ? ", null" : ""}`,
        ]),
      ),
    );
    expect(documented).toHaveLength(USAGE_EVENTS_PARQUET_SCHEMA.length);
  });

  it("its DuckDB query gives the aggregates of a tenant's files", async () => {
    const query = /```sql\n([\s\S]*?)```/.exec(section)?.[1];
    if (!query) throw new Error("no sql block in the archive section");
    const day = Date.parse("2026-11-22T00:00:00.000Z");
    const mine = randomEvents(TENANT, 1_500, day);
    const theirs = randomEvents(OTHER_TENANT, 500, day);
    const files = [
      {
        key: `usage/tenant=${TENANT}/date=2026-11-22/shard-0-a.parquet`,
        bytes: encodeUsageEventsParquet(mine.slice(0, 900)),
      },
      {
        key: `usage/tenant=${TENANT}/date=2026-11-23/shard-0-b.parquet`,
        bytes: encodeUsageEventsParquet(mine.slice(900)),
      },
      {
        key: `usage/tenant=${OTHER_TENANT}/date=2026-11-22/shard-0-c.parquet`,
        bytes: encodeUsageEventsParquet(theirs),
      },
    ];
    const rows = await queryParquet(files, query.replaceAll("<tenant id>", TENANT));
    expect(rows).toEqual(jsSums(mine));
  });
});
