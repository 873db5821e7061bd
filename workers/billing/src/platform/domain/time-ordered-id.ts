/**
 * A UUID version 7 (RFC 9562): 48 bits of Unix milliseconds, then random
 * bits. A usage event's id in its usage log (and its outbox entry's, which
 * is the same) takes one, so each batch's rows go to the end of the
 * primary-key indexes rather than to a random page each: with tens of millions of rows, a random key
 * dirties one index page per event, a time-ordered key a few per batch.
 */
export function timeOrderedUuid(nowMs: number = Date.now()): string {
  const bytes = crypto.getRandomValues(new Uint8Array(16));
  let ms = Math.max(0, Math.floor(nowMs));
  for (let index = 5; index >= 0; index--) {
    bytes[index] = ms % 256;
    ms = Math.floor(ms / 256);
  }
  bytes[6] = ((bytes[6] ?? 0) & 0x0f) | 0x70;
  bytes[8] = ((bytes[8] ?? 0) & 0x3f) | 0x80;
  const hex = Array.from(bytes, (byte) => byte.toString(16).padStart(2, "0")).join("");
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}`;
}
