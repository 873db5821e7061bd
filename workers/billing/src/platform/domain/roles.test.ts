import { describe, expect, it } from "vitest";
import { mayReadMoney, maySettle } from "./roles.ts";

describe("who may do what to money", () => {
  it("tenant OWNER, ADMIN and BILLING read; DEVELOPER does not; platform administrators read any tenant's", () => {
    for (const role of ["OWNER", "ADMIN", "BILLING"] as const) {
      expect(mayReadMoney({ role, platformAdmin: false })).toBe(true);
    }
    expect(mayReadMoney({ role: "DEVELOPER", platformAdmin: false })).toBe(false);
    expect(mayReadMoney({ role: null, platformAdmin: true })).toBe(true);
  });

  it("only platform administrators settle invoices: no tenant role does, not even OWNER", () => {
    for (const role of ["OWNER", "ADMIN", "BILLING", "DEVELOPER"] as const) {
      expect(maySettle({ role, platformAdmin: false })).toBe(false);
    }
    expect(maySettle({ role: null, platformAdmin: true })).toBe(true);
    expect(maySettle({ role: "OWNER", platformAdmin: true })).toBe(true);
  });
});
