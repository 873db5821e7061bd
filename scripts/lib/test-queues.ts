import { unstable_readConfig } from "wrangler";

/** The fields of a `[[queues.consumers]]` entry this reads. */
interface QueueConsumerConfig {
  queue: string;
  max_batch_size?: number;
  max_batch_timeout?: number;
  max_retries?: number;
  dead_letter_queue?: string;
  retry_delay?: number;
}

/** How long a test run's queue consumers wait to fill a batch, in seconds. */
const TEST_MAX_BATCH_TIMEOUT = 0.05;

/**
 * A worker's queue consumers as its wrangler config declares them (batch
 * size, retries, retry delay, dead-letter queue), as Miniflare
 * `queueConsumers` options for a vitest config, except that a partial batch
 * is delivered after at most 50 ms instead of after `max_batch_timeout`
 * (1 s for most): tests wait for queue work (webhooks, deliveries, tenant
 * events, dead letters), and each hop would otherwise wait out the timeout.
 */
export function promptQueueConsumers(configPath: string) {
  const { queues } = unstable_readConfig({ config: configPath }, { hideWarnings: true });
  const consumers: QueueConsumerConfig[] = queues.consumers ?? [];
  return Object.fromEntries(
    consumers.map((consumer) => [
      consumer.queue,
      {
        maxBatchSize: consumer.max_batch_size,
        maxBatchTimeout: Math.min(consumer.max_batch_timeout ?? 1, TEST_MAX_BATCH_TIMEOUT),
        maxRetries: consumer.max_retries,
        deadLetterQueue: consumer.dead_letter_queue,
        retryDelay: consumer.retry_delay,
      },
    ]),
  );
}
