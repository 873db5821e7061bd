/**
 * The billing benchmark's UNIQUE_COUNT consume: a QUOTA feature whose meter
 * counts distinct `user_id`s under a HARD limit far above what a run can
 * reach, consumed with `{"properties": {"user_id": ...}}`. Most values
 * drawn were counted before (seeded), so the counter admits them with no
 * change; one in NEW_EVERY is new and takes a unit. Both paths run the
 * limit check in the counter's synchronous step, as a HARD consume does.
 */
import { autocannon } from "./autocannon.ts";
import { send } from "./billing-setup.ts";

/** One request in this many draws a value never sent before. */
export const NEW_EVERY = 10;

export interface UserIdDraws {
  /** The values counted before the run (`seed` sends each once). */
  pool: string[];
  /** The next request's value. */
  next(): string;
  /** New values drawn so far (each one a distinct value the counter has not seen). */
  newDrawn(): number;
}

/**
 * Values for the consumes: draw `n` is new when n % newEvery is newEvery-1,
 * otherwise the next pool value, stepping by a stride prime to the pool's
 * size so that every pool value comes round once per cycle and neighbours
 * are not drawn together. Deterministic, so a run's mix is the same every time.
 */
export function userIdDraws(poolSize: number, prefix: string, newEvery = NEW_EVERY): UserIdDraws {
  const pool = Array.from({ length: poolSize }, (_, index) => `${prefix}-${index}`);
  const stride = strideFor(poolSize);
  let drawn = 0;
  let fresh = 0;
  let fromPool = 0;
  return {
    pool,
    next() {
      const n = drawn++;
      if (poolSize === 0 || n % newEvery === newEvery - 1) return `${prefix}-new-${fresh++}`;
      return pool[(fromPool++ * stride) % poolSize]!;
    },
    newDrawn: () => fresh,
  };
}

/** The smallest stride above 1 that shares no factor with `size` (every value visited once per cycle). */
export function strideFor(size: number): number {
  const gcd = (a: number, b: number): number => (b === 0 ? a : gcd(b, a % b));
  for (let stride = 7; stride < size; stride++) if (gcd(stride, size) === 1) return stride;
  return 1;
}

/** A consume's body for a value. */
export function uniqueConsumeBody(userId: string): string {
  return JSON.stringify({ properties: { user_id: userId } });
}

/**
 * The feature (QUOTA, UNIQUE_COUNT of `user_id`) granted to `planId` with a
 * HARD limit of 10^9, before the tenant subscribes (a subscription keeps
 * the entitlements its plan had when it started).
 */
export async function grantUniqueCountFeature(
  base: string,
  admin: string,
  planId: string,
  label: string,
) {
  const feature = await send(base, "/features", {
    token: admin,
    body: {
      name: `${label} active users`,
      lookupKey: `${label}_users`,
      type: "QUOTA",
      unit: "user",
      meter: { aggregation: "UNIQUE_COUNT", property: "user_id" },
    },
  });
  await send(base, `/plans/${planId}/entitlements`, {
    token: admin,
    body: {
      featureId: feature.id,
      limit: 1_000_000_000,
      limitBehavior: "HARD",
      resetPeriod: "MONTHLY",
    },
  });
  return feature as { id: string; lookupKey: string };
}

/** Consumes each pool value once (10 at a time), so that the run's pool draws are already counted. */
export async function seedPool(
  base: string,
  lookupKey: string,
  apiKey: string,
  pool: string[],
): Promise<void> {
  let next = 0;
  await Promise.all(
    Array.from({ length: 10 }, async () => {
      while (next < pool.length) {
        const userId = pool[next++]!;
        await send(base, `/entitlements/${lookupKey}/consume`, {
          token: apiKey,
          body: { properties: { user_id: userId } },
        });
      }
    }),
  );
}

/**
 * Integrity under load: exactly `amount` consumes of drawn values at
 * `connections`; every one must be answered 2xx and the counter's `used`
 * must have grown by exactly the new values among them (a repeated value
 * counted once, a new one never lost). With a fixed amount autocannon
 * builds a request only to send it, so every value drawn reaches the worker.
 */
export async function exactUniqueConsumes(options: {
  base: string;
  lookupKey: string;
  apiKey: string;
  draws: UserIdDraws;
  amount: number;
  connections: number;
}) {
  const { base, lookupKey, apiKey, draws } = options;
  const used = async () =>
    (await send(base, `/entitlements/${lookupKey}/check`, { token: apiKey })).used as number;
  const before = await used();
  const newBefore = draws.newDrawn();
  const result = await autocannon({
    url: `${base}/api/v1/entitlements/${lookupKey}/consume`,
    method: "POST",
    headers: { "content-type": "application/json", authorization: `Bearer ${apiKey}` },
    connections: options.connections,
    amount: options.amount,
    requests: [
      {
        setupRequest: (request) => {
          request.body = uniqueConsumeBody(draws.next());
          return request;
        },
      },
    ],
  });
  const grew = (await used()) - before;
  const fresh = draws.newDrawn() - newBefore;
  return {
    answered2xx: result["2xx"],
    grew,
    fresh,
    intact: result["2xx"] === options.amount && grew === fresh,
  };
}
