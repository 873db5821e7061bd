import { describe, expect, it } from "vitest";
import type { ApiResult } from "../api-client.ts";
import { alertLine, paymentBanner } from "./overview.ts";

const ok = (data: unknown[]): ApiResult => ({ ok: true, status: 200, body: { data } }) as ApiResult;
const now = new Date("2026-12-30T12:00:00Z");
const invoice = {
  id: "inv-1",
  invoiceNumber: "INV-2026-000042",
  status: "OPEN",
  total: 2900,
  currency: "usd",
  dueDate: "2027-01-06T00:00:00.000Z",
};

describe("overview", () => {
  it("warns when the newest open invoice's payment failed, with the reason and the next try", async () => {
    const banner = String(
      await paymentBanner(
        ok([invoice]),
        ok([
          {
            invoiceId: "inv-1",
            status: "FAILED",
            failureReason: "card_declined",
            nextRetryAt: "2026-12-31T12:00:00.000Z",
          },
        ]),
        now,
      ),
    );
    expect(banner).toContain("INV-2026-000042 (29.00 USD): the payment failed (card_declined).");
    expect(banner).toContain("2026-12-31 12:00 UTC");
    expect(banner).toContain('href="/console/invoices/inv-1"');
  });

  it("warns when an open invoice is past due, and says nothing while all is well", async () => {
    const late = { ...invoice, dueDate: "2026-12-28T00:00:00.000Z" };
    expect(String(await paymentBanner(ok([late]), ok([]), now))).toContain(
      "is past due since 2026-12-28 00:00 UTC",
    );
    expect(String(await paymentBanner(ok([invoice]), ok([]), now))).toBe("");
    expect(String(await paymentBanner(ok([{ ...late, status: "PAID" }]), ok([]), now))).toBe("");
    const unreadable = { ok: false, status: 403, body: {} } as ApiResult;
    expect(String(await paymentBanner(unreadable, unreadable, now))).toBe("");
  });

  it("says each figure of a fired alert once", () => {
    const names = new Map([["api_calls", "API calls"]]);
    expect(
      alertLine(
        {
          featureLookupKey: "api_calls",
          thresholdUnits: 7000,
          threshold: { type: "units", value: 7000 },
        },
        7383,
        names,
      ),
    ).toBe("API calls (api_calls) reached 7,000 units; 7,383 used now");
    expect(
      alertLine(
        {
          featureLookupKey: "api_calls",
          thresholdUnits: 8000,
          threshold: { type: "percent", value: 80 },
        },
        8312,
        names,
      ),
    ).toBe("API calls (api_calls) reached 80% of its limit (8,000 units); 8,312 used now");
  });
});
