import { retryDelaySeconds } from "@edge-platform/shared/queues/usage";

/**
 * Acks or retries each message of a batch exactly once. Retries back off
 * exponentially with the message's attempts; a message past the queue's
 * max_retries goes to its dead-letter queue (the runtime does that).
 */
export class Settlement<Body> {
  private readonly settled = new Set<string>();

  constructor(private readonly messages: readonly Message<Body>[]) {}

  ack(message: Message<Body>): void {
    if (this.settled.has(message.id)) return;
    this.settled.add(message.id);
    message.ack();
  }

  retry(message: Message<Body>, error: unknown, stage: string): void {
    if (this.settled.has(message.id)) return;
    this.settled.add(message.id);
    const delaySeconds = retryDelaySeconds(message.attempts);
    console.error(
      JSON.stringify({
        level: "warn",
        msg: "usage message will be retried",
        stage,
        messageId: message.id,
        attempts: message.attempts,
        delaySeconds,
        error: error instanceof Error ? error.message : String(error),
      }),
    );
    message.retry({ delaySeconds });
  }

  /** Retries every message not settled yet (after a failure that hit them all). */
  retryRest(error: unknown, stage: string): void {
    for (const message of this.messages) this.retry(message, error, stage);
  }

  ackRest(): void {
    for (const message of this.messages) this.ack(message);
  }
}
