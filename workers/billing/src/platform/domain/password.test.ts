import { describe, expect, it } from "vitest";
import {
  constantTimeEqual,
  hashPassword,
  PASSWORD_ITERATIONS,
  verifyPassword,
} from "./password.ts";

describe("password hashing", () => {
  it("stores algorithm, iterations and a per-hash salt", async () => {
    const a = await hashPassword("Correct-Horse-1");
    const b = await hashPassword("Correct-Horse-1");
    expect(a).toMatch(
      new RegExp(
        `^pbkdf2-sha256\\$${PASSWORD_ITERATIONS}\\$[A-Za-z0-9+/=]{24}\\$[A-Za-z0-9+/=]{44}$`,
      ),
    );
    expect(a).not.toBe(b);
  });

  it("verifies the right password and rejects a wrong one", async () => {
    const stored = await hashPassword("Correct-Horse-1");
    expect(await verifyPassword("Correct-Horse-1", stored)).toEqual({
      valid: true,
      needsRehash: false,
    });
    expect(await verifyPassword("correct-horse-1", stored)).toEqual({
      valid: false,
      needsRehash: false,
    });
  });

  it("asks for a re-hash when the stored policy is older", async () => {
    const weak = await hashPassword("Correct-Horse-1", 1_000);
    expect(await verifyPassword("Correct-Horse-1", weak)).toEqual({
      valid: true,
      needsRehash: true,
    });
  });

  it("rejects malformed or foreign hashes instead of throwing", async () => {
    for (const stored of ["", "bcrypt$12$x$y", "pbkdf2-sha256$abc$x$y", "pbkdf2-sha256$1000$$"]) {
      expect((await verifyPassword("x", stored)).valid).toBe(false);
    }
  });

  it("compares byte strings of different lengths safely", () => {
    expect(constantTimeEqual(new Uint8Array([1, 2]), new Uint8Array([1, 2]))).toBe(true);
    expect(constantTimeEqual(new Uint8Array([1, 2]), new Uint8Array([1, 2, 0]))).toBe(false);
  });
});
