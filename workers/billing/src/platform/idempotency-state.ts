import type { OnceShownSecrets } from "./domain/idempotency.ts";

/** What a consume hands its tenant's EntitlementCounter, which records the key. */
export interface CounterIdempotency {
  /** The caller and the key, hashed. */
  requestId: string;
  /** The request's fingerprint: the same key with another one is a 422. */
  requestHash: string;
  /** The idempotency clock when the request came in. */
  atMs: number;
}

export interface IdempotencyState {
  key: string;
  /** The route records the key in the EntitlementCounter, not in D1. */
  inCounter: boolean;
  /** Set for `inCounter` routes once the caller is known. */
  counter?: CounterIdempotency;
  claimed?: boolean;
  onceShown?: OnceShownSecrets;
  clock: () => number;
}

export type IdempotencyVariables = { idempotency: IdempotencyState | undefined };
