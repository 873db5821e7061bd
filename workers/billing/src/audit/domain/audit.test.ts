import { describe, expect, it } from "vitest";
import { fieldChanges, isSecretField, statusChange } from "./audit.ts";

describe("fieldChanges", () => {
  it("lists only the fields that differ, before and after", () => {
    expect(
      fieldChanges({ name: "A", limit: 5, same: true }, { name: "B", limit: 5, same: true }),
    ).toEqual({ name: { before: "A", after: "B" } });
  });

  it("describes creation and deletion with one side only", () => {
    expect(fieldChanges(null, { name: "A", limit: null })).toEqual({
      name: { after: "A" },
      limit: { after: null },
    });
    expect(fieldChanges({ name: "A" }, null)).toEqual({ name: { before: "A" } });
  });

  it("compares nested values by content", () => {
    expect(fieldChanges({ metadata: { a: 1 } }, { metadata: { a: 1 } })).toEqual({});
    expect(fieldChanges({ metadata: { a: 1 } }, { metadata: { a: 2 } })).toEqual({
      metadata: { before: { a: 1 }, after: { a: 2 } },
    });
  });

  it("never carries secrets, hashes, tokens or bookkeeping timestamps", () => {
    const changes = fieldChanges(
      { passwordHash: "x", keyHash: "y", tokenHash: "z", key: "mk_1", updatedAt: "t1" },
      { passwordHash: "x2", keyHash: "y2", tokenHash: "z2", key: "mk_2", updatedAt: "t2" },
    );
    expect(changes).toEqual({});
  });

  it("restricts the comparison to the named fields", () => {
    expect(fieldChanges({ a: 1, b: 1 }, { a: 2, b: 2 }, ["a"])).toEqual({
      a: { before: 1, after: 2 },
    });
  });
});

describe("isSecretField and statusChange", () => {
  it("recognises secret-like names", () => {
    for (const name of ["password", "newPassword", "keyHash", "refreshToken", "secret", "key"]) {
      expect(isSecretField(name)).toBe(true);
    }
    for (const name of ["name", "keyPrefix", "status", "limit"])
      expect(isSecretField(name)).toBe(false);
  });

  it("builds a status change with extra fields", () => {
    expect(statusChange("OPEN", "VOID", { reason: { after: "x" } })).toEqual({
      status: { before: "OPEN", after: "VOID" },
      reason: { after: "x" },
    });
  });
});
