import { exports } from "cloudflare:workers";
import { extractText, getDocumentProxy } from "unpdf";
import { beforeAll, describe, expect, it } from "vitest";
import { asTenant, buildMoneyPlan, consumeAt, type MoneyPlan } from "./billing-helpers.ts";
import { platformAdmin, subscribe } from "./catalog-helpers.ts";
import { type Account, addMember, expectError, readResult, register, request } from "./helpers.ts";

let admin: Account;
let plan: MoneyPlan;

beforeAll(async () => {
  admin = await platformAdmin();
  plan = await buildMoneyPlan(admin, 2900);
});

async function pdfText(response: Response): Promise<string> {
  const document = await getDocumentProxy(new Uint8Array(await response.arrayBuffer()));
  const { text } = await extractText(document, { mergePages: true });
  return text.replace(/\s+/g, " ");
}

async function fetchPdf(token: string, tenantId: string, invoiceId: string) {
  return exports.default.fetch(
    request(`/api/v1/invoices/${invoiceId}/pdf`, { token, tenant: tenantId }),
  );
}

describe("GET /invoices/{id}/pdf", () => {
  it("carries seller, tenant, number, dates, lines, totals and status; VOID says so on its face", async () => {
    const owner = await register({ tenantName: "Pdf Röntgen Labs" });
    await subscribe(owner, plan.planId, plan.priceId);
    await consumeAt(owner.tenant.id, plan.keys.calls, 1200, new Date());
    const api = asTenant(admin, owner.tenant.id);
    const details = await api(`/api/v1/tenants/${owner.tenant.id}/billing-details`, {
      method: "PUT",
      body: {
        legalName: "Pdf Röntgen Labs GmbH",
        taxRate: 19,
        taxId: "DE123456789",
        address: { line1: "Hauptstraße 1", city: "Berlin", postalCode: "10115", country: "de" },
      },
    });
    expect(details.status, JSON.stringify(details.body)).toBe(200);
    const draft = (await api("/api/v1/invoices/generate", { method: "POST" })).body;
    const finalized = await api(`/api/v1/invoices/${draft.id}/finalize`, { method: "POST" });
    expect(finalized.status, JSON.stringify(finalized.body)).toBe(201);
    const invoice = finalized.body;

    const response = await fetchPdf(owner.accessToken, owner.tenant.id, invoice.id);
    expect(response.status).toBe(200);
    expect(response.headers.get("content-type")).toBe("application/pdf");
    expect(response.headers.get("content-disposition")).toBe(
      `attachment; filename="${invoice.invoiceNumber}.pdf"`,
    );
    const text = await pdfText(response);
    expect(text).toContain(invoice.invoiceNumber);
    expect(text).toContain("Edge Platform Billing");
    expect(text).toContain("Pdf Röntgen Labs GmbH");
    expect(text).toContain("Tax ID: DE123456789");
    expect(text).toContain(`Status: ${invoice.status}`);
    for (const line of invoice.lineItems.filter((l: { kind: string }) => l.kind !== "TAX")) {
      expect(text).toContain(line.description);
    }
    expect(text).toContain("Subtotal");
    expect(text).toContain("29.30 USD");
    expect(text).toContain("Tax (19%)");
    expect(text).toMatch(/Total due\s*34\.87 USD/);
    expect(invoice.total).toBe(3487);
    expect(text).toContain(
      `${invoice.periodStart.slice(0, 10)} to ${invoice.periodEnd.slice(0, 10)}`,
    );
    expect(text).not.toContain("VOID");

    await api(`/api/v1/invoices/${invoice.id}/void`, { method: "POST" });
    const voided = await pdfText(await fetchPdf(owner.accessToken, owner.tenant.id, invoice.id));
    expect(voided).toContain("Status: VOID");
    expect(voided).toContain("this invoice is cancelled and nothing is owed on it");
    expect(voided).toContain("Total (void)");
  });

  it("has the invoice read's roles and tenant scope", async () => {
    const owner = await register();
    await subscribe(owner, plan.planId, plan.priceId);
    const draft = (
      await asTenant(admin, owner.tenant.id)("/api/v1/invoices/generate", { method: "POST" })
    ).body;
    const developer = await addMember(owner, "DEVELOPER");
    const billing = await addMember(owner, "BILLING");
    const stranger = await register();
    const read = async (token: string, tenantId = owner.tenant.id) => {
      const response = await fetchPdf(token, tenantId, draft.id);
      return response;
    };
    expect((await read(billing.accessToken)).status).toBe(200);
    expect((await read(admin.accessToken)).status).toBe(200);
    const draftText = await pdfText(await read(owner.accessToken));
    expect(draftText).toContain("DRAFT INVOICE");
    expect((await read(developer.accessToken)).status).toBe(403);
    expect((await read(stranger.accessToken)).status).toBe(403);
    // Another tenant's id reads as absent, not as someone else's invoice.
    const foreign = await fetchPdf(stranger.accessToken, stranger.tenant.id, draft.id);
    expect(foreign.status).toBe(404);
    const noAuth = await exports.default.fetch(
      request(`/api/v1/invoices/${draft.id}/pdf`, { tenant: owner.tenant.id }),
    );
    expect(noAuth.status).toBe(401);
    const bad = await fetchPdf(owner.accessToken, owner.tenant.id, "nope");
    expectError(await readResult(bad), 400);
  });
});
