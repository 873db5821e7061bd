import { describe, expect, it } from "vitest";
import { trialDaysFor } from "./trials.ts";

describe("trialDaysFor: one trial per tenant, from the catalog", () => {
  it("gives the price's trial on a first subscription of a tenant that never had one", () => {
    expect(trialDaysFor({ trialDays: 14 }, { planChange: false, hadTrial: false })).toBe(14);
  });
  it("gives none when the price has none (null or 0)", () => {
    expect(trialDaysFor({ trialDays: null }, { planChange: false, hadTrial: false })).toBe(
      undefined,
    );
    expect(trialDaysFor({ trialDays: 0 }, { planChange: false, hadTrial: false })).toBe(undefined);
  });
  it("never on a plan change, and never a second time", () => {
    expect(trialDaysFor({ trialDays: 14 }, { planChange: true, hadTrial: false })).toBe(undefined);
    expect(trialDaysFor({ trialDays: 14 }, { planChange: false, hadTrial: true })).toBe(undefined);
  });
});
