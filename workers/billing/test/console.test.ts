import { env, exports } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { paymentIntentEvent, signedWebhook, waitForWebhook } from "./billing-helpers.ts";
import { buildPlan, createFeature, grant, platformAdmin, subscribe } from "./catalog-helpers.ts";
import { type Account, addMember, call, PASSWORD, register, uniqueIp } from "./helpers.ts";

// The console driven as a browser drives it: form posts, cookies, redirects.

const ORIGIN = "http://billing";

class Browser {
  readonly cookies = new Map<string, string>();
  readonly setCookieHeaders: string[] = [];
  private readonly ip = uniqueIp();

  async fetch(
    path: string,
    init: {
      method?: string;
      form?: Record<string, string | string[]>;
      headers?: Record<string, string>;
    } = {},
  ) {
    const headers = new Headers(init.headers);
    headers.set("cf-connecting-ip", this.ip);
    if (this.cookies.size > 0) {
      headers.set(
        "cookie",
        [...this.cookies].map(([name, value]) => `${name}=${value}`).join("; "),
      );
    }
    let body: URLSearchParams | undefined;
    if (init.form) {
      body = new URLSearchParams();
      for (const [name, value] of Object.entries(init.form)) {
        for (const one of Array.isArray(value) ? value : [value]) body.append(name, one);
      }
      headers.set("content-type", "application/x-www-form-urlencoded");
    }
    const response = await exports.default.fetch(
      new Request(`${ORIGIN}${path}`, {
        method: init.method ?? (body ? "POST" : "GET"),
        headers,
        body: body ?? null,
        redirect: "manual",
      }),
    );
    for (const line of response.headers.getSetCookie()) {
      this.setCookieHeaders.push(line);
      const [pair] = line.split(";");
      const [name, ...rest] = (pair ?? "").split("=");
      const value = rest.join("=");
      if (!name) continue;
      if (value === "" || /max-age=0/i.test(line)) this.cookies.delete(name);
      else this.cookies.set(name, value);
    }
    return { response, text: await response.text() };
  }

  /** A same-origin form post, with the session's CSRF token, as the console's own pages send. */
  post(path: string, form: Record<string, string | string[]> = {}) {
    return this.fetch(path, {
      form: { _csrf: this.cookies.get("console_csrf") ?? "", _idem: crypto.randomUUID(), ...form },
      headers: { origin: ORIGIN },
    });
  }

  async signIn(email: string, password = PASSWORD) {
    const { response } = await this.fetch("/console/login", {
      form: { email, password, next: "/console/keys" },
      headers: { origin: ORIGIN },
    });
    expect(response.status).toBe(303);
    return response;
  }
}

/**
 * A new owner subscribed to a new plan (one entitlement of every kind, and
 * whatever `extend` grants before the subscription), signed in to the console.
 */
async function subscribedOwnerSignedIn(extend?: (admin: Account, planId: string) => Promise<void>) {
  const admin = await platformAdmin();
  const built = await buildPlan(admin);
  await extend?.(admin, built.plan.id);
  const owner = await register();
  await subscribe(owner, built.plan.id, built.monthly.id);
  const browser = new Browser();
  await browser.signIn(owner.email);
  return { admin, built, owner, browser };
}

describe("console session", () => {
  it("signs in to HttpOnly, Secure, SameSite=Strict cookies and shows the tenant's pages", async () => {
    const owner = await register();
    const browser = new Browser();
    const signedIn = await browser.signIn(owner.email);
    expect(signedIn.headers.get("location")).toBe("/console/keys");
    const session = browser.setCookieHeaders.filter((line) =>
      /^console_(access|refresh|csrf)=/.test(line),
    );
    expect(session).toHaveLength(3);
    for (const line of session) {
      expect(line).toMatch(/HttpOnly/);
      expect(line).toMatch(/Secure/);
      expect(line).toMatch(/SameSite=Strict/);
      expect(line).toMatch(/Path=\/console/);
    }
    const overview = await browser.fetch("/console/overview");
    expect(overview.response.status).toBe(200);
    expect(overview.response.headers.get("content-security-policy")).toContain(
      "default-src 'none'",
    );
    expect(overview.text).toContain(owner.tenant.name);
    expect(overview.text).toContain("has no subscription yet");
    for (const page of ["usage", "invoices", "keys", "members", "alerts", "webhooks", "audit"]) {
      const shown = await browser.fetch(`/console/${page}`);
      expect(shown.response.status, page).toBe(200);
      expect(shown.text, page).not.toContain('"statusCode"');
    }
  });

  it("sends anyone without a session to sign-in, and says so when the password is wrong", async () => {
    const browser = new Browser();
    const page = await browser.fetch("/console/invoices");
    expect(page.response.status).toBe(303);
    expect(page.response.headers.get("location")).toBe("/console/login?next=%2Fconsole%2Finvoices");
    const owner = await register();
    const wrong = await browser.fetch("/console/login", {
      form: { email: owner.email, password: "not-it-1A" },
      headers: { origin: ORIGIN },
    });
    expect(wrong.response.status).toBe(401);
    expect(wrong.text).toContain("The email or password is not right.");
    expect(browser.cookies.size).toBe(0);
  });

  it("refuses state-changing requests from another origin, without an origin, or without the form token", async () => {
    const owner = await register();
    const browser = new Browser();
    await browser.signIn(owner.email);
    const csrf = browser.cookies.get("console_csrf") ?? "";
    const attempts: { headers: Record<string, string>; form: Record<string, string> }[] = [
      { headers: { origin: "http://evil.example" }, form: { _csrf: csrf, name: "x" } },
      { headers: {}, form: { _csrf: csrf, name: "x" } },
      { headers: { origin: ORIGIN }, form: { name: "x" } },
      { headers: { origin: ORIGIN }, form: { _csrf: "forged", name: "x" } },
    ];
    for (const attempt of attempts) {
      const refused = await browser.fetch("/console/keys", attempt);
      expect(refused.response.status).toBe(403);
      expect(refused.text).toContain("nothing was changed");
    }
    const foreignLogin = await new Browser().fetch("/console/login", {
      form: { email: owner.email, password: PASSWORD },
      headers: { origin: "http://evil.example" },
    });
    expect(foreignLogin.response.status).toBe(403);
    const keys = await call("/api/v1/api-keys", {
      token: owner.accessToken,
      tenant: owner.tenant.id,
    });
    expect(keys.body.data).toHaveLength(0);
    // A same-origin fetch without Origin but with Sec-Fetch-Site and the token goes through.
    const allowed = await browser.fetch("/console/keys", {
      headers: { "sec-fetch-site": "same-origin" },
      form: { _csrf: csrf, _idem: crypto.randomUUID(), name: "through" },
    });
    expect(allowed.response.status).toBe(200);
  });

  it("creates a key through the API's rules (shown once, audited, idempotent) and revokes it", async () => {
    const owner = await register();
    const browser = new Browser();
    await browser.signIn(owner.email);
    const idem = crypto.randomUUID();
    const created = await browser.post("/console/keys", { name: "console key", _idem: idem });
    expect(created.response.status).toBe(200);
    const raw = /<code id="new-key">([^<]+)<\/code>/.exec(created.text)?.[1];
    expect(raw).toMatch(/^mk_/);
    // The same form sent twice (same Idempotency-Key) makes one key.
    const again = await browser.post("/console/keys", { name: "console key", _idem: idem });
    expect(again.text).not.toContain(raw);
    const keys = await call("/api/v1/api-keys", {
      token: owner.accessToken,
      tenant: owner.tenant.id,
    });
    expect(keys.body.data).toHaveLength(1);
    const audit = await call("/api/v1/audit-events?action=api_key.created", {
      token: owner.accessToken,
      tenant: owner.tenant.id,
    });
    expect(audit.body.data[0]).toMatchObject({ actorType: "user", actorId: owner.user.id });
    const revoked = await browser.post(`/console/keys/${keys.body.data[0].id}/revoke`);
    expect(revoked.response.status).toBe(303);
    expect(revoked.response.headers.get("location")).toBe("/console/keys?notice=key-revoked");
    const after = await browser.fetch("/console/keys?notice=key-revoked");
    expect(after.text).toContain("The key is revoked");
    expect(after.text).toContain("REVOKED");
  });

  it("shows the prepaid credit on the overview and buys more with the top-up form", async () => {
    const { admin, owner, browser } = await subscribedOwnerSignedIn();
    const empty = await browser.fetch("/console/overview");
    expect(empty.text).toContain("Prepaid credit");
    expect(empty.text).toContain('data-testid="prepaid-balance">0.00 USD<');
    expect(empty.text).toContain("No credit yet");
    expect(empty.text).toContain('action="/console/credits/top-up"');

    // Bad amounts come back as sentences on the overview, and buy nothing.
    const fraction = await browser.post("/console/credits/top-up", { amount: "12.5" });
    expect(fraction.response.status).toBe(400);
    expect(fraction.text).toContain("is not a whole number of cents");
    const zero = await browser.post("/console/credits/top-up", { amount: "0" });
    expect(zero.response.status).toBe(400);
    expect(zero.text).toContain("amount must be from 1 to 1,000,000,000 cents");
    const grants = () =>
      call("/api/v1/credit-grants", { token: owner.accessToken, tenant: owner.tenant.id });
    expect((await grants()).body.data).toHaveLength(0);

    // The same form sent twice (same Idempotency-Key) buys once.
    const idem = crypto.randomUUID();
    for (let attempt = 0; attempt < 2; attempt++) {
      const bought = await browser.post("/console/credits/top-up", { amount: "2500", _idem: idem });
      expect(bought.response.status).toBe(303);
      expect(bought.response.headers.get("location")).toBe(
        "/console/overview?notice=credit-bought",
      );
    }
    const [grant] = (await grants()).body.data;
    expect((await grants()).body.data).toHaveLength(1);
    expect(grant).toMatchObject({ amount: 2500, category: "paid", status: "PENDING" });
    const pending = await browser.fetch("/console/overview?notice=credit-bought");
    expect(pending.text).toContain("PENDING until the TOP_UP invoice is paid");
    expect(pending.text).toContain("badge-pending");
    expect(pending.text).toContain(`href="/console/invoices/${grant.invoiceId}"`);
    expect(pending.text).toContain('data-testid="prepaid-balance">0.00 USD<');

    const paid = await call(`/api/v1/invoices/${grant.invoiceId}/mark-paid`, {
      token: admin.accessToken,
      tenant: owner.tenant.id,
      body: {},
    });
    expect(paid.status, JSON.stringify(paid.body)).toBeLessThan(300);
    const active = await browser.fetch("/console/overview");
    expect(active.text).toContain("badge-active");
    expect(active.text).toContain('data-testid="prepaid-balance">25.00 USD<');

    // A developer is told the credit is not for their role, and gets no form.
    const developer = await addMember(owner, "DEVELOPER");
    const other = new Browser();
    await other.signIn(developer.email);
    const limited = await other.fetch("/console/overview");
    expect(limited.text).toContain("cannot see the prepaid credit");
    expect(limited.text).not.toContain('action="/console/credits/top-up"');
  });

  it("signs out by revoking the refresh token", async () => {
    const owner = await register();
    const browser = new Browser();
    await browser.signIn(owner.email);
    const refreshToken = browser.cookies.get("console_refresh") ?? "";
    const out = await browser.post("/console/logout");
    expect(out.response.status).toBe(200);
    expect(out.text).toContain("You are signed out");
    expect(browser.cookies.has("console_refresh")).toBe(false);
    const reuse = await call("/api/v1/auth/refresh", { body: { refreshToken } });
    expect(reuse.status).toBe(401);
    const page = await browser.fetch("/console/overview");
    expect(page.response.status).toBe(303);
  });

  it("switches between the user's tenants, and keeps operator screens to platform administrators", async () => {
    const owner = await register();
    const second = await call("/api/v1/tenants", {
      token: owner.accessToken,
      body: { name: "Second Tenant", slug: `second-${crypto.randomUUID().slice(0, 8)}` },
    });
    expect(second.status).toBe(201);
    const browser = new Browser();
    await browser.signIn(owner.email);
    const first = await browser.fetch("/console/members");
    expect(first.text).toContain('id="tenant-switch"');
    const switched = await browser.post("/console/tenant", { tenantId: second.body.id });
    expect(switched.response.status).toBe(303);
    expect(browser.cookies.get("console_tenant")).toBe(second.body.id);
    const members = await browser.fetch("/console/members");
    expect(members.text).toMatch(/<option value="[^"]+" selected>Second Tenant \(OWNER\)/);
    const operator = await browser.fetch("/console/admin/tenants");
    expect(operator.response.status).toBe(403);
    expect(operator.text).toContain("Only platform administrators");

    const admin = await platformAdmin();
    const adminBrowser = new Browser();
    await adminBrowser.signIn(admin.email, admin.password);
    const tenants = await adminBrowser.fetch(
      `/console/admin/tenants?search=${encodeURIComponent("Second Tenant")}`,
    );
    expect(tenants.response.status).toBe(200);
    expect(tenants.text).toContain("Second Tenant");
  });
});

describe("console operator actions", () => {
  it("retries and discards dead letters through the admin routes", async () => {
    const admin = await platformAdmin();
    const browser = new Browser();
    await browser.signIn(admin.email, admin.password);
    const ids = [crypto.randomUUID(), crypto.randomUUID()];
    for (const id of ids) {
      await env.DB.prepare(
        `INSERT INTO dead_letter_events (id, topic, failure_stage, failure_reason, original_payload)
         VALUES (?, 'usage-raw', 'VALIDATION', 'console test', '{"not":"an event"}')`,
      )
        .bind(id)
        .run();
    }
    const listed = await browser.fetch("/console/admin/dead-letters");
    expect(listed.text).toContain(`/console/admin/dead-letters/${ids[0]}/discard`);
    const discarded = await browser.post(`/console/admin/dead-letters/${ids[0]}/discard`);
    expect(discarded.response.headers.get("location")).toBe(
      "/console/admin/dead-letters?notice=dead-letter-discarded",
    );
    const again = await browser.post(`/console/admin/dead-letters/${ids[0]}/discard`);
    expect(again.response.status).toBe(400);
    expect(again.text).toContain("already discarded");
    const retried = await browser.post(`/console/admin/dead-letters/${ids[1]}/retry`);
    // A payload that is not an event cannot be sent again: said in words.
    expect([303, 400, 409]).toContain(retried.response.status);
    if (retried.response.status !== 303) expect(retried.text).toMatch(/class="error"/);
    const row = await env.DB.prepare("SELECT status FROM dead_letter_events WHERE id = ?")
      .bind(ids[0])
      .first<{ status: string }>();
    expect(row?.status).toBe("DISCARDED");
  });
});

describe("console first steps", () => {
  it("leads the bare origin to the console, and every page names its icon inline", async () => {
    const root = await exports.default.fetch(new Request(`${ORIGIN}/`, { redirect: "manual" }));
    expect(root.status).toBe(302);
    expect(root.headers.get("location")).toBe("/console");
    const owner = await register();
    const browser = new Browser();
    await browser.signIn(owner.email);
    for (const path of ["/console/login", "/console/overview", "/console/usage", "/api/docs"]) {
      const page = await browser.fetch(path);
      expect(page.text, path).toMatch(
        /<link rel="icon" type="image\/svg\+xml" href="data:image\/svg\+xml,/,
      );
    }
  });

  it("shows one credit figure and one period line; a new key comes with a command that works", async () => {
    const { owner, browser } = await subscribedOwnerSignedIn();
    const overview = await browser.fetch("/console/overview");
    expect(overview.text.match(/data-testid="prepaid-balance"/g)).toHaveLength(1);
    expect(overview.text).not.toContain("Credit balance");
    const active = await call("/api/v1/subscriptions/active", {
      token: owner.accessToken,
      tenant: owner.tenant.id,
    });
    const periodEnd = String(active.body.currentPeriodEnd).slice(0, 10);
    expect(overview.text.split(periodEnd).length - 1).toBe(1);
    expect(overview.text).not.toContain("payment-banner");

    const created = await browser.post("/console/keys", { name: "first steps" });
    expect(created.response.status).toBe(200);
    const command = /<code id="new-key-curl">([\s\S]*?)<\/code>/.exec(created.text)?.[1] ?? "";
    const key = /<code id="new-key">([^<]+)<\/code>/.exec(created.text)?.[1] ?? "";
    expect(command).toContain(`Bearer ${key}`);
    // The command's body is what the API takes: sent as written, the event is accepted.
    const shown = command.replace(/&(quot|#39|#34|amp);/g, (entity) =>
      entity === "&amp;" ? "&" : entity === "&#39;" ? "'" : '"',
    );
    const body = /-d '([^']+)'/.exec(shown)?.[1] ?? "";
    const sent = await call("/api/v1/usage/events", { token: key, body: JSON.parse(body) });
    expect(sent.status, JSON.stringify(sent.body)).toBe(202);
  });

  it("refuses a percent alert on a feature with nothing to be a percent of, and names actors by e-mail", async () => {
    let uncapped = { id: "", lookupKey: "" };
    const { owner, browser, built } = await subscribedOwnerSignedIn(async (admin, planId) => {
      uncapped = await createFeature(admin, "METERED");
      await grant(admin, planId, uncapped.id, { overagePrice: 10, resetPeriod: "MONTHLY" });
    });
    const refused = await browser.post("/console/alerts", {
      featureLookupKey: uncapped.lookupKey,
      type: "percent",
      value: "80",
    });
    expect(refused.response.status).toBe(400);
    expect(refused.text).toContain("has no limit or included amount");
    const capped = await browser.post("/console/alerts", {
      featureLookupKey: built.keys.metered,
      type: "percent",
      value: "80",
    });
    expect(capped.response.status).toBe(303);
    const alerts = await browser.fetch("/console/alerts");
    expect(alerts.text).toContain("80% (800 units)");
    expect(alerts.text).toContain("Not yet (0 used)");
    expect(alerts.text).toMatch(new RegExp(`data-capped="false">[^<]*${uncapped.lookupKey}`));
    await browser.post("/console/keys", { name: "audited" });
    const audit = await browser.fetch("/console/audit?action=api_key.created");
    expect(audit.text).toContain(owner.email);
    const badDay = await browser.fetch("/console/audit?from=11%2F20%2F2026");
    expect(badDay.text).toContain("must be a day written YYYY-MM-DD");
  });
});

describe("console credit notes", () => {
  it("lets an operator issue a REDUCE note on an OPEN invoice, and the tenant read it and download its PDF", async () => {
    const { admin, owner, browser } = await subscribedOwnerSignedIn();
    const operator = new Browser();
    await operator.signIn(admin.email, admin.password);
    const tenantQuery = `?tenantId=${owner.tenant.id}`;
    const asOperator = { token: admin.accessToken, tenant: owner.tenant.id };
    const generated = await operator.post(`/console/admin/settlement/generate${tenantQuery}`);
    expect(generated.response.status, generated.text).toBe(303);
    const [draft] = (await call("/api/v1/invoices", asOperator)).body.data;
    const finalized = await operator.post(
      `/console/admin/settlement/${draft.id}/finalize${tenantQuery}`,
    );
    expect(finalized.response.status, finalized.text).toBe(303);
    const invoice = (await call(`/api/v1/invoices/${draft.id}`, asOperator)).body;
    expect(invoice).toMatchObject({ status: "OPEN", creditedTotal: 0, tax: 0 });
    const base = invoice.lineItems.find((line: { kind: string }) => line.kind === "BASE");
    expect(base.amount).toBe(2900);

    // The settlement list leads to the form: one amount per charge, settlements an OPEN invoice takes.
    const settlement = await operator.fetch(`/console/admin/settlement${tenantQuery}`);
    const formPath = `/console/admin/settlement/${invoice.id}/credit-note${tenantQuery}`;
    expect(settlement.text).toContain(`href="${formPath}"`);
    const form = await operator.fetch(formPath);
    expect(form.response.status).toBe(200);
    expect(form.text).toContain(`name="line-${base.id}"`);
    expect(form.text).toContain('<label class="visually-hidden" for="cn-line-');
    expect(form.text).toMatch(
      /<form method="post" action="[^"]+" class="panel" data-confirm="Issue a credit note on INV-/,
    );
    expect(form.text).toContain('value="REDUCE"');
    expect(form.text).not.toContain('value="REFUND"');

    // Refusals come back as sentences on the form, which keeps what was typed: first the
    // API's own, while the payment attempt finalizing started still waits at the provider.
    const credit = (amount: string) => ({
      reason: "ORDER_CHANGE",
      settlement: "REDUCE",
      [`line-${base.id}`]: amount,
    });
    const inFlight = await operator.post(formPath, credit("1000"));
    expect(inFlight.response.status).toBe(409);
    expect(inFlight.text).toContain("Could not issue the credit note: A payment of INV-");
    expect(inFlight.text).toContain('value="1000"');
    const [attempt] = (await call("/api/v1/billing/payments", asOperator)).body.data;
    const declined = paymentIntentEvent("payment_intent.payment_failed", attempt.providerPaymentId);
    expect((await signedWebhook(declined)).status).toBe(200);
    expect((await waitForWebhook(declined.id)).status).toBe("PROCESSED");
    const fraction = await operator.post(formPath, credit("10.5"));
    expect(fraction.response.status).toBe(400);
    expect(fraction.text).toContain("is not a whole number of cents");
    const tooMuch = await operator.post(formPath, credit("2901"));
    expect(tooMuch.response.status).toBe(409);
    expect(tooMuch.text).toContain("has 2900 cents left to credit; 2901 asked");

    // The same form sent twice (same Idempotency-Key) issues one note.
    const fields = {
      reason: "ORDER_CHANGE",
      settlement: "REDUCE",
      [`line-${base.id}`]: "1000",
      memo: "Plan changed mid-month",
      _idem: crypto.randomUUID(),
    };
    for (let attempt = 0; attempt < 2; attempt++) {
      const issued = await operator.post(formPath, fields);
      expect(issued.response.status, issued.text).toBe(303);
      expect(issued.response.headers.get("location")).toBe(
        `/console/invoices/${invoice.id}${tenantQuery}&notice=credit-note-issued`,
      );
    }
    const notes = (await call("/api/v1/credit-notes", asOperator)).body.data;
    expect(notes).toHaveLength(1);
    const [note] = notes;
    expect(note).toMatchObject({ settlement: "REDUCE", subtotal: 1000, tax: 0, total: 1000 });
    const shown = await operator.fetch(
      `/console/invoices/${invoice.id}${tenantQuery}&notice=credit-note-issued`,
    );
    expect(shown.text).toContain("The credit note is issued");
    expect(shown.text).toContain(note.number);
    expect(shown.text).toContain('data-testid="invoice-amount-due">19.00 USD<');

    // The tenant sees it listed, on its invoice, and downloads its PDF.
    const listed = await browser.fetch("/console/credit-notes");
    expect(listed.response.status).toBe(200);
    expect(listed.text).toContain('href="/console/credit-notes" aria-current="page"');
    expect(listed.text).toContain(note.number);
    expect(listed.text).toContain(`>${invoice.invoiceNumber}</a>`);
    expect(listed.text).toContain("Order change");
    expect(listed.text).toContain('data-label="Total" class="num">10.00 USD<');
    const detail = await browser.fetch(`/console/invoices/${invoice.id}`);
    expect(detail.text).toContain('data-testid="invoice-credited">10.00 USD<');
    expect(detail.text).toContain('data-testid="invoice-amount-due">19.00 USD<');
    expect(detail.text).not.toContain("Issue a credit note");
    const pdf = await browser.fetch(`/console/credit-notes/${note.id}/pdf`);
    expect(pdf.response.status).toBe(200);
    expect(pdf.response.headers.get("content-type")).toBe("application/pdf");
    expect(pdf.text.startsWith("%PDF")).toBe(true);

    // A developer is not shown the credit notes.
    const developer = await addMember(owner, "DEVELOPER");
    const other = new Browser();
    await other.signIn(developer.email);
    const refused = await other.fetch("/console/credit-notes");
    expect(refused.response.status).toBe(403);
    expect(refused.text).not.toContain(note.number);
  });
});
