import { exports } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import {
  createApiKey,
  createFeature,
  createPlan,
  createPrice,
  grant,
  platformAdmin,
  subscribe,
} from "./catalog-helpers.ts";
import { call, PASSWORD, register, uniqueIp } from "./helpers.ts";
import { countPendingEvents } from "./meter-usage-helpers.ts";

// The console's usage chart split by a property of the feature's meter,
// driven as a browser drives it: sign-in form, cookies, GET forms.

const ORIGIN = "http://billing";

/** Just enough of a browser for GET pages: the session cookies of a form sign-in. */
class Browser {
  private readonly cookies = new Map<string, string>();
  private readonly ip = uniqueIp();

  async fetch(path: string, init: { form?: Record<string, string> } = {}) {
    const headers = new Headers({ "cf-connecting-ip": this.ip, origin: ORIGIN });
    headers.set("cookie", [...this.cookies].map(([name, value]) => `${name}=${value}`).join("; "));
    if (init.form) headers.set("content-type", "application/x-www-form-urlencoded");
    const response = await exports.default.fetch(
      new Request(`${ORIGIN}${path}`, {
        method: init.form ? "POST" : "GET",
        headers,
        body: init.form ? new URLSearchParams(init.form) : null,
        redirect: "manual",
      }),
    );
    for (const line of response.headers.getSetCookie()) {
      const [name, ...rest] = (line.split(";")[0] ?? "").split("=");
      if (name) this.cookies.set(name, rest.join("="));
    }
    return { response, text: await response.text() };
  }

  async signIn(email: string) {
    const { response } = await this.fetch("/console/login", {
      form: { email, password: PASSWORD, next: "/console/usage" },
    });
    expect(response.status).toBe(303);
  }
}

describe("console usage chart split by a meter property", () => {
  it("offers the meter's groupBy properties and draws one labelled line per value, with a legend", async () => {
    const admin = await platformAdmin();
    const meter = { aggregation: "SUM", property: "tokens", groupBy: ["model", "region"] };
    const llm = await createFeature(admin, "METERED", { meter, name: "LLM tokens" });
    const calls = await createFeature(admin, "METERED");
    const plan = await createPlan(admin);
    const price = await createPrice(admin, plan.id);
    await grant(admin, plan.id, llm.id, { overagePrice: 1, resetPeriod: "MONTHLY" });
    await grant(admin, plan.id, calls.id, { overagePrice: 10, resetPeriod: "MONTHLY" });
    const owner = await register();
    const subscription = await subscribe(owner, plan.id, price.id);
    const key = await createApiKey(owner);
    const timestamp = new Date().toISOString();
    const event = (feature: string, properties: Record<string, string | number>) => ({
      eventId: crypto.randomUUID(),
      feature,
      timestamp,
      properties,
    });
    const sent = await call("/api/v1/usage/events", {
      token: key,
      body: [
        event(llm.lookupKey, { model: "large", region: "eu", tokens: 900 }),
        event(llm.lookupKey, { model: "large", region: "us", tokens: 300 }),
        event(llm.lookupKey, { model: "small", region: "eu", tokens: 40 }),
        event(calls.lookupKey, {}),
      ],
    });
    expect(sent.body.accepted).toBe(4);
    await countPendingEvents({
      tenantId: owner.tenant.id,
      subscriptionId: subscription.id,
      startedAt: new Date(subscription.startedAt),
    });

    const browser = new Browser();
    await browser.signIn(owner.email);
    const unsplit = await browser.fetch(`/console/usage?feature=${llm.lookupKey}`);
    expect(unsplit.response.status).toBe(200);
    expect(unsplit.text).toContain('<label for="split">Split by</label>');
    expect(unsplit.text).toMatch(
      /<select id="split" name="split"><option value="">None<\/option><option value="model">model<\/option><option value="region">region<\/option><\/select>/,
    );
    expect(unsplit.text).toContain('data-total="1240"');
    expect(unsplit.text).not.toContain('class="line"');

    const split = await browser.fetch(`/console/usage?feature=${llm.lookupKey}&split=model`);
    expect(split.response.status).toBe(200);
    expect(split.text).toContain('<option value="model" selected>model</option>');
    const lines = [
      ...split.text.matchAll(
        /<polyline class="line"[^>]*stroke="(#[0-9A-Fa-f]{6})"[^>]*data-series="([^"]+)"/g,
      ),
    ];
    // The larger first, each in its own colour.
    expect(lines.map((line) => line[2])).toEqual(["large", "small"]);
    expect(new Set(lines.map((line) => line[1])).size).toBe(2);
    expect(split.text).toContain('<ul class="legend">');
    expect(split.text).toMatch(/<\/svg> large <span class="hint">total 1,200<\/span>/);
    expect(split.text).toMatch(/<\/svg> small <span class="hint">total 40<\/span>/);
    expect(split.text).toContain(
      `aria-label="${llm.lookupKey} by model: 2 lines in 24 hour buckets, total of each: large 1,200; small 40."`,
    );
    expect(split.text).toContain('<th scope="col">large</th><th scope="col">small</th>');
    expect(split.text).not.toContain('class="bar"');

    // A plain feature has nothing to split by: no choice, and a split asked for is ignored.
    const plain = await browser.fetch(`/console/usage?feature=${calls.lookupKey}&split=model`);
    expect(plain.response.status).toBe(200);
    expect(plain.text).not.toContain('id="split"');
    expect(plain.text).toContain('data-total="1"');
    expect(plain.text).not.toContain('class="line"');
  });
});
