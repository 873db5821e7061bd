import { describe, expect, it } from "vitest";
import { devAdminCredentials, registerTenantOwner, send } from "./lib/billing-api.ts";

// Idempotency-Key and the audit trail against the running stack: a client
// retrying writes over real HTTP connections, and who can read the trail.

const suffix = `${Date.now().toString(36)}${Math.random().toString(36).slice(2, 6)}`;

async function owner(label: string) {
  const registered = await registerTenantOwner({
    email: `e2e-${label}-${suffix}@example.com`,
    password: "Sup3rSecret",
    firstName: "E2E",
    lastName: label,
    tenantName: `E2E ${label}`,
    tenantSlug: `e2e-${label}-${suffix}`,
  });
  return {
    token: registered.accessToken as string,
    tenant: registered.tenant.id as string,
    userId: registered.user.id as string,
  };
}

describe("Idempotency-Key and audit events against the running stack", () => {
  it("replays retried writes, counts a racing consume once, and records who changed what", async () => {
    const acme = await owner("idem");
    const pro = await send("/plans/slug/pro");
    expect(pro.status).toBe(200);
    const monthly = pro.body.prices.find(
      (price: { interval: string }) => price.interval === "MONTHLY",
    );
    const subscribed = await send("/subscriptions", {
      token: acme.token,
      tenant: acme.tenant,
      body: { planId: pro.body.id, priceId: monthly.id },
      headers: { "Idempotency-Key": `subscribe-${suffix}` },
    });
    expect(subscribed.status, JSON.stringify(subscribed.body)).toBe(201);
    const again = await send("/subscriptions", {
      token: acme.token,
      tenant: acme.tenant,
      body: { planId: pro.body.id, priceId: monthly.id },
      headers: { "Idempotency-Key": `subscribe-${suffix}` },
    });
    expect(again.status).toBe(201);
    expect(again.headers.get("idempotent-replayed")).toBe("true");
    expect(again.body.id).toBe(subscribed.body.id);
    const listed = await send("/subscriptions", { token: acme.token, tenant: acme.tenant });
    expect(listed.body.meta.total).toBe(1);

    // A retried key creation: same key id, the raw key only in the first answer.
    const createKey = () =>
      send("/api-keys", {
        token: acme.token,
        tenant: acme.tenant,
        body: { name: "server" },
        headers: { "Idempotency-Key": `key-${suffix}` },
      });
    const key = await createKey();
    expect(key.status).toBe(201);
    const replayedKey = await createKey();
    expect(replayedKey.status).toBe(201);
    expect(replayedKey.body.id).toBe(key.body.id);
    expect(replayedKey.body.key).toBeUndefined();
    expect(replayedKey.body.notice).toMatch(/shown only in the first response/);
    const apiKey = key.body.key as string;

    // 20 parallel consumes with one key, as a client's retries would race: one unit.
    const usedBefore = (await send("/entitlements/api_calls/check", { token: apiKey })).body.used;
    const consume = (amount: number, idempotencyKey: string) =>
      send("/entitlements/api_calls/consume", {
        token: apiKey,
        body: { amount },
        headers: { "Idempotency-Key": idempotencyKey },
      });
    const raced = await Promise.all(Array.from({ length: 20 }, () => consume(1, `race-${suffix}`)));
    expect(raced.every((result) => result.status === 200 || result.status === 409)).toBe(true);
    const usedAfter = (await send("/entitlements/api_calls/check", { token: apiKey })).body.used;
    expect(usedAfter - usedBefore).toBe(1);
    const replay = await consume(1, `race-${suffix}`);
    expect(replay.status).toBe(200);
    expect(replay.headers.get("idempotent-replayed")).toBe("true");
    const conflict = await consume(2, `race-${suffix}`);
    expect(conflict.status).toBe(422);
    expect(conflict.body.message).toMatch(/used with other parameters/);
    const malformed = await consume(1, "");
    expect(malformed.status).toBe(400);

    // The trail: the owner sees their tenant's events; another tenant's owner does not.
    const trail = await send("/audit-events", { token: acme.token, tenant: acme.tenant });
    expect(trail.status).toBe(200);
    const actions = trail.body.data.map((event: { action: string }) => event.action);
    expect(actions).toEqual(expect.arrayContaining(["subscription.created", "api_key.created"]));
    expect(actions.filter((action: string) => action === "api_key.created")).toHaveLength(1);
    const created = trail.body.data.find(
      (event: { action: string }) => event.action === "api_key.created",
    );
    expect(created).toMatchObject({
      actorType: "user",
      actorId: acme.userId,
      targetId: key.body.id,
    });
    expect(JSON.stringify(trail.body)).not.toContain(apiKey);

    const stranger = await owner("stranger");
    expect(
      (await send("/audit-events", { token: stranger.token, tenant: acme.tenant })).status,
    ).toBe(403);
    expect((await send("/audit-events", { token: stranger.token })).status).toBe(403);

    const admin = await send("/auth/login", { body: devAdminCredentials() });
    const everything = await send(`/audit-events?targetId=${key.body.id}`, {
      token: admin.body.accessToken,
    });
    expect(everything.status).toBe(200);
    expect(everything.body.data).toHaveLength(1);
  }, 120_000);
});
