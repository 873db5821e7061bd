/** Vector helpers for the local index and the semantic cache. */

export function dot(a: ArrayLike<number>, b: ArrayLike<number>): number {
  const n = Math.min(a.length, b.length);
  let sum = 0;
  for (let i = 0; i < n; i++) sum += a[i]! * b[i]!;
  return sum;
}

export function norm(a: ArrayLike<number>): number {
  return Math.sqrt(dot(a, a));
}

/** Cosine similarity; 0 when either vector is all zeros or the dimensions differ. */
export function cosine(a: ArrayLike<number>, b: ArrayLike<number>): number {
  if (a.length !== b.length) return 0;
  const denominator = norm(a) * norm(b);
  return denominator === 0 ? 0 : dot(a, b) / denominator;
}

export function normalize(vector: number[]): number[] {
  const length = norm(vector);
  return length === 0 ? vector : vector.map((value) => value / length);
}

/** Float32 bytes for a BLOB column. */
export function encodeVector(vector: ArrayLike<number>): Uint8Array {
  return new Uint8Array(Float32Array.from(vector as ArrayLike<number>).buffer);
}

/** Reads a BLOB column back; D1 returns BLOBs as byte arrays or ArrayBuffers. */
export function decodeVector(value: unknown): Float32Array {
  if (value instanceof ArrayBuffer) return new Float32Array(value.slice(0));
  if (ArrayBuffer.isView(value)) {
    const bytes = new Uint8Array(value.buffer, value.byteOffset, value.byteLength);
    return new Float32Array(bytes.slice().buffer);
  }
  if (Array.isArray(value)) return new Float32Array(Uint8Array.from(value as number[]).buffer);
  throw new TypeError("not a stored vector");
}

export const round4 = (value: number) => Math.round(value * 10_000) / 10_000;
