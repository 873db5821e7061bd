import { describe, expect, it } from "vitest";
import { graceEndsAt, isLastAttempt, MAX_PAYMENT_ATTEMPTS, nextRetryAt } from "./payment.ts";

describe("the retry schedule", () => {
  it("retries after 1, 3 and 5 days, then stops; grace is 7 days", () => {
    const failed = new Date("2026-03-01T00:00:00.000Z");
    expect(nextRetryAt(1, failed)?.toISOString()).toBe("2026-03-02T00:00:00.000Z");
    expect(nextRetryAt(2, failed)?.toISOString()).toBe("2026-03-04T00:00:00.000Z");
    expect(nextRetryAt(3, failed)?.toISOString()).toBe("2026-03-06T00:00:00.000Z");
    expect(nextRetryAt(4, failed)).toBeNull();
    expect(MAX_PAYMENT_ATTEMPTS).toBe(4);
    expect(isLastAttempt(3)).toBe(false);
    expect(isLastAttempt(4)).toBe(true);
    expect(graceEndsAt(failed).toISOString()).toBe("2026-03-08T00:00:00.000Z");
  });
});

describe("stuck payments", () => {
  it("a provider outage is retried after 15 minutes and marked so it is not a dunning step", async () => {
    const { unavailableRetryAt, isProviderUnavailableReason, PROVIDER_UNAVAILABLE_REASON } =
      await import("./payment.ts");
    const failedAt = new Date("2026-03-01T00:00:00.000Z");
    expect(unavailableRetryAt(failedAt).toISOString()).toBe("2026-03-01T00:15:00.000Z");
    expect(isProviderUnavailableReason(`${PROVIDER_UNAVAILABLE_REASON}: 503`)).toBe(true);
    expect(isProviderUnavailableReason("Your card was declined.")).toBe(false);
    expect(isProviderUnavailableReason(null)).toBe(false);
  });

  it("reads the pending bound from configuration, defaulting to 60 minutes", async () => {
    const { pendingReconcileMinutes } = await import("./payment.ts");
    expect(pendingReconcileMinutes(undefined)).toBe(60);
    expect(pendingReconcileMinutes("15")).toBe(15);
    expect(pendingReconcileMinutes("0")).toBe(60);
    expect(pendingReconcileMinutes("soon")).toBe(60);
  });
});
