/**
 * Password hashing with WebCrypto PBKDF2-SHA256 (no native bcrypt or argon2
 * on Workers, and no run-time WebAssembly compilation). The stored string
 * carries the algorithm and iteration count, so the policy can be raised
 * later and old hashes still verify (and get re-hashed on login).
 *
 * Format: `pbkdf2-sha256$<iterations>$<salt base64>$<hash base64>`.
 */
import { base64, fromBase64 } from "./secrets.ts";

const ALGORITHM = "pbkdf2-sha256";
// Cloudflare's production runtime has refused PBKDF2 counts above 100,000.
export const PASSWORD_ITERATIONS = 100_000;
const SALT_BYTES = 16;
const HASH_BITS = 256;

async function derive(
  password: string,
  salt: Uint8Array<ArrayBuffer>,
  iterations: number,
): Promise<Uint8Array> {
  const key = await crypto.subtle.importKey(
    "raw",
    new TextEncoder().encode(password),
    "PBKDF2",
    false,
    ["deriveBits"],
  );
  const bits = await crypto.subtle.deriveBits(
    { name: "PBKDF2", hash: "SHA-256", salt, iterations },
    key,
    HASH_BITS,
  );
  return new Uint8Array(bits);
}

/** Compares in time independent of where the inputs first differ. */
export function constantTimeEqual(a: Uint8Array, b: Uint8Array): boolean {
  let difference = a.length ^ b.length;
  const length = Math.max(a.length, b.length);
  for (let i = 0; i < length; i++) difference |= (a[i] ?? 0) ^ (b[i] ?? 0);
  return difference === 0;
}

export async function hashPassword(
  password: string,
  iterations = PASSWORD_ITERATIONS,
): Promise<string> {
  const salt = crypto.getRandomValues(new Uint8Array(SALT_BYTES));
  const hash = await derive(password, salt, iterations);
  return `${ALGORITHM}$${iterations}$${base64(salt)}$${base64(hash)}`;
}

export interface PasswordVerification {
  valid: boolean;
  /** The hash was made under a weaker policy than the current one: store a new one. */
  needsRehash: boolean;
}

export async function verifyPassword(
  password: string,
  stored: string,
): Promise<PasswordVerification> {
  const [algorithm, iterationsText, saltText, hashText] = stored.split("$");
  const iterations = Number(iterationsText);
  if (
    algorithm !== ALGORITHM ||
    !Number.isInteger(iterations) ||
    iterations < 1 ||
    !saltText ||
    !hashText
  ) {
    return { valid: false, needsRehash: false };
  }
  const expected = fromBase64(hashText);
  const actual = await derive(password, fromBase64(saltText), iterations);
  const valid = constantTimeEqual(actual, expected);
  return { valid, needsRehash: valid && iterations !== PASSWORD_ITERATIONS };
}
