import { rawQueueIndex } from "@edge-platform/shared/queues/usage";

/*
 * Which usage-raw queue a tenant shard's events go to. USAGE_RAW_QUEUES
 * names how many there are (8 in wrangler.toml, 1 when unset); queue 0 is
 * the USAGE_RAW_QUEUE binding, queue i > 0 the USAGE_RAW_QUEUE_<i> binding
 * (queue usage-raw-<i>). A tenant's shards take consecutive queues from a
 * stable hash of its id (shared/src/queues/usage.ts), so a tenant with
 * several shards spreads its stream over as many queues. Changing either
 * count moves shards between queues; nothing depends on which queue an
 * event came by, so messages already on their way are judged the same.
 */

/** Raw queues at most (bindings per Worker are plenty; this bounds a typo). */
export const MAX_RAW_QUEUES = 64;

export function rawQueueCount(value: string | undefined): number {
  const number = Number(value);
  if (value === undefined || value.trim() === "" || !Number.isFinite(number) || number < 1) {
    return 1;
  }
  return Math.min(MAX_RAW_QUEUES, Math.floor(number));
}

/** The producer binding of raw queue `index`. */
export function rawQueueBinding(index: number): string {
  return index === 0 ? "USAGE_RAW_QUEUE" : `USAGE_RAW_QUEUE_${index}`;
}

type RawQueueEnv = Pick<Env, "USAGE_RAW_QUEUE" | "USAGE_RAW_QUEUES">;

/**
 * The raw queue of the tenant's usage-log shard. A count naming a binding
 * the Worker does not have is a configuration error: it is logged and the
 * shard's events go to usage-raw, so they still flow.
 */
export function usageRawQueue(env: RawQueueEnv, tenantId: string, shard: number): Queue {
  const index = rawQueueIndex(tenantId, rawQueueCount(env.USAGE_RAW_QUEUES), shard);
  if (index === 0) return env.USAGE_RAW_QUEUE;
  const binding = rawQueueBinding(index);
  const queue = (env as unknown as Record<string, Queue | undefined>)[binding];
  if (queue) return queue;
  console.error(
    JSON.stringify({
      level: "error",
      msg: "USAGE_RAW_QUEUES names a raw queue binding this Worker does not have; using usage-raw",
      binding,
      queues: env.USAGE_RAW_QUEUES,
    }),
  );
  return env.USAGE_RAW_QUEUE;
}
