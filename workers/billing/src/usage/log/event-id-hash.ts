/*
 * The 8-byte hash of a client eventId that the usage log's archived-id
 * index keys on (id-index.ts). It only narrows the search: a hash hit is
 * confirmed against the full eventId before anything is decided, so two
 * ids sharing a hash cost a slower lookup, never a wrong answer.
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
