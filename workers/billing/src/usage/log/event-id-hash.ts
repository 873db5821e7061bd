import { fnv1a } from "@edge-platform/shared/usage-log/client";
/*
 * The 8-byte hash of a client eventId that the usage log's archived-id
 * index keys on (id-index.ts), and a 4-byte check of it stored beside.
 * A hash hit whose check matches too is the id (96 bits: a false match
 * among a shard's ids is far below one in 10^18 over a platform's life),
 * so a resent archived id costs one index lookup; a hit whose check
 * differs is another id. Rows written before the check existed have none:
 * their hits are confirmed against the file's own eventIds.
 *
 * The hash is two 32-bit halves, mixed with Math.imul (no BigInt on the
 * ingestion path); SQLite joins them into one signed 64-bit integer,
 * `(hi << 32) | lo`, which is the index table's rowid.
 */

/** [hi, lo]: hi a signed 32-bit integer, lo an unsigned one. */
export type EventIdHash = (eventId: string) => [hi: number, lo: number];

/** cyrb53's two-lane mixing, kept at 64 bits. */
export const eventIdHash: EventIdHash = (eventId) => {
  let h1 = 0xdeadbeef;
  let h2 = 0x41c6ce57;
  for (let index = 0; index < eventId.length; index++) {
    const code = eventId.charCodeAt(index);
    h1 = Math.imul(h1 ^ code, 2654435761);
    h2 = Math.imul(h2 ^ code, 1597334677);
  }
  h1 = Math.imul(h1 ^ (h1 >>> 16), 2246822507);
  h1 ^= Math.imul(h2 ^ (h2 >>> 13), 3266489909);
  h2 = Math.imul(h2 ^ (h2 >>> 16), 2246822507);
  h2 ^= Math.imul(h1 ^ (h1 >>> 13), 3266489909);
  return [h2 | 0, h1 >>> 0];
};

/** The SQL expression of the 64-bit key of a `[hi, lo]` JSON pair in `column`. */
export function hashKeySql(column: string): string {
  return `((json_extract(${column}, '$[0]') << 32) | json_extract(${column}, '$[1]'))`;
}

/**
 * The 4-byte check stored beside an id's hash: FNV-1a over the id, a
 * different function from the hash's, so the two are independent. A signed
 * 32-bit integer (SQLite keeps it in 4 bytes).
 */
export function eventIdCheck(eventId: string): number {
  return fnv1a(eventId) | 0;
}
