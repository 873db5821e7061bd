import { describe, expect, it } from "vitest";
import { devAdminCredentials, send } from "./lib/billing-api.ts";

// The usage pipeline's acceptance test against the running stack (wrangler
// dev with billing and usage-consumer in one process: real D1, queues and
// Durable Objects): the demo tenant (acme, Pro plan) reports a 1000-event
// batch with every kind of problem in it, then the same batch again.

const DAY = 86_400_000;

async function mapLimit<T, R>(
  items: T[],
  limit: number,
  fn: (item: T) => Promise<R>,
): Promise<R[]> {
  const results: R[] = new Array(items.length);
  let next = 0;
  await Promise.all(
    Array.from({ length: limit }, async () => {
      while (next < items.length) {
        const index = next++;
        results[index] = await fn(items[index] as T);
      }
    }),
  );
  return results;
}

const event = (overrides: Record<string, unknown> = {}) => ({
  eventId: crypto.randomUUID(),
  feature: "api_calls",
  amount: 1,
  timestamp: new Date().toISOString(),
  ...overrides,
});

const SETTLE_BOUND_MS = 60_000;

describe("usage pipeline acceptance", () => {
  it(
    "takes a 1000-event batch to final statuses; aggregates and the check agree",
    async () => {
      const login = await send("/auth/login", { body: devAdminCredentials() });
      expect(login.status).toBe(200);
      const tenants = await send("/tenants", { token: login.body.accessToken });
      const acme = tenants.body.data.find((t: { slug: string }) => t.slug === "acme");
      const key = await send("/api-keys", {
        token: login.body.accessToken,
        tenant: acme.id,
        body: { name: "usage e2e" },
      });
      expect(key.status).toBe(201);
      const apiKey = key.body.key as string;

      const now = Date.now();
      const valid = Array.from({ length: 930 }, (_, i) => event({ amount: (i % 3) + 1 }));
      const rejected = [
        ...Array.from(
          { length: 20 },
          (_, i) => [event({ eventId: `order-${now}-${i}` }), "INVALID_EVENT_ID"] as const,
        ),
        ...Array.from(
          { length: 10 },
          (_, i) => [event({ feature: `teleport_${i}` }), "FEATURE_NOT_ENTITLED"] as const,
        ),
        ...Array.from(
          { length: 10 },
          () => [event({ feature: "sso" }), "BOOLEAN_FEATURE"] as const,
        ),
        ...Array.from(
          { length: 5 },
          () =>
            [
              event({ timestamp: new Date(now - 8 * DAY).toISOString() }),
              "TIMESTAMP_TOO_OLD",
            ] as const,
        ),
        ...Array.from(
          { length: 5 },
          () =>
            [
              event({ timestamp: new Date(now + 10 * 60_000).toISOString() }),
              "TIMESTAMP_IN_FUTURE",
            ] as const,
        ),
      ];
      const repeats = valid.slice(100, 120);
      const batch = [
        ...valid.slice(0, 500),
        ...repeats,
        ...rejected.map(([e]) => e),
        ...valid.slice(500),
      ];
      expect(batch).toHaveLength(1000);
      const expectedUnits = valid.reduce((sum, e) => sum + (e.amount as number), 0);

      const usedBefore = (await send("/entitlements/api_calls/check", { token: apiKey })).body
        .used as number;
      const aggregated = async () => {
        const rows = (await send("/usage/aggregates?feature=api_calls", { token: apiKey })).body
          .data;
        return rows.reduce((sum: number, row: { amount: number }) => sum + row.amount, 0) as number;
      };
      const aggregatedBefore = await aggregated();

      const started = Date.now();
      const first = await send("/usage/events", { token: apiKey, body: { events: batch } });
      expect(first.status).toBe(202);
      expect(first.body).toMatchObject({ accepted: 1000, rejected: 0, duplicates: 20 });
      expect(
        first.body.events.filter((e: { status: string }) => e.status === "duplicate"),
      ).toHaveLength(20);

      const again = await send("/usage/events", { token: apiKey, body: batch });
      expect(again.status).toBe(202);
      expect(again.body).toMatchObject({ accepted: 1000, rejected: 0, duplicates: 1000 });

      // Final statuses: every valid event is counted (the aggregate increment
      // only adds units of events it claimed as AGGREGATED), and every
      // rejected one is REJECTED with its reason.
      // A correctness bound only, generous for a loaded machine: how fast the
      // pipeline settles is measured by bench/usage.ts (202 -> AGGREGATED).
      let settledAfter = Number.POSITIVE_INFINITY;
      while (Date.now() - started < SETTLE_BOUND_MS) {
        const units = (await aggregated()) - aggregatedBefore;
        const statuses = await mapLimit(
          rejected,
          10,
          async ([e]) =>
            (await send(`/usage/events/${encodeURIComponent(e.eventId)}`, { token: apiKey })).body,
        );
        if (units === expectedUnits && statuses.every((s) => s.status === "REJECTED")) {
          settledAfter = Date.now() - started;
          expect(statuses.map((s) => s.reason)).toEqual(rejected.map(([, reason]) => reason));
          break;
        }
        expect(units).toBeLessThanOrEqual(expectedUnits);
        await new Promise((resolve) => setTimeout(resolve, 100));
      }
      console.log(`[e2e] 1000-event batch settled ${settledAfter} ms after the request was sent`);
      expect(settledAfter, `not settled within ${SETTLE_BOUND_MS} ms`).toBeLessThan(
        SETTLE_BOUND_MS,
      );

      // Every event individually, and the check's `used` against the aggregates.
      const views = await mapLimit(
        valid,
        20,
        async (e) => (await send(`/usage/events/${e.eventId}`, { token: apiKey })).body,
      );
      expect(views.every((v) => v.status === "AGGREGATED")).toBe(true);
      const usedAfter = (await send("/entitlements/api_calls/check", { token: apiKey })).body
        .used as number;
      expect(usedAfter - usedBefore).toBe(expectedUnits);
      expect((await aggregated()) - aggregatedBefore).toBe(usedAfter - usedBefore);
    },
    SETTLE_BOUND_MS + 60_000,
  );
});
