/**
 * Messages per second on the busiest usage-raw queue. Each usage-log shard
 * of a tenant sends to its own queue: the tenant's shards take consecutive
 * queues from where a hash of its id points (shared/src/queues/usage.ts).
 */
export interface RawQueueLoad {
  /** Raw queues (USAGE_RAW_QUEUES). */
  queues: number;
  /** The busiest tenant's messages per second, and its shards. */
  hotMessages: number;
  hotShards: number;
  /** The other tenants' messages per second together, how many they are, and each one's shards. */
  otherMessages: number;
  otherTenants: number;
  otherShards: number;
}

/**
 * The busiest tenant puts ceil(shards / queues) of its shards on one
 * queue. Each other tenant's messages land on a queue with probability
 * min(shards, queues) / queues, a 1/min(shards, queues) share each time, so
 * a queue's share of them is a sum of such draws: the model takes its mean
 * plus two standard deviations. Both peaks are taken to fall on one queue.
 */
export function busiestRawQueueMessages(load: RawQueueLoad): number {
  const queues = Math.max(1, Math.floor(load.queues));
  const hotShards = Math.max(1, load.hotShards);
  const hot = (load.hotMessages * Math.ceil(hotShards / queues)) / hotShards;
  return hot + load.otherMessages * busiestOtherShare(load, queues);
}

function busiestOtherShare(load: RawQueueLoad, queues: number): number {
  const tenants = load.otherTenants;
  if (queues === 1 || tenants <= 0) return 1;
  const shards = Math.max(1, load.otherShards);
  if (shards >= queues) return Math.ceil(shards / queues) / shards;
  const variance = (1 / (shards * queues) - 1 / queues ** 2) / tenants;
  return Math.min(1, 1 / queues + 2 * Math.sqrt(Math.max(0, variance)));
}
