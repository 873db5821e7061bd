import { describe, expect, it } from "vitest";
import { buildPlan, platformAdmin, subscribe } from "./catalog-helpers.ts";
import { call, expectError, register } from "./helpers.ts";

// Display reads go through a D1 session (read replicas when enabled); the
// session's bookmark travels in x-d1-bookmark so a client can ask for data
// at least as recent as what it saw.

describe("subscription display reads through D1 sessions", () => {
  it("answer with a bookmark, accept it back, and refuse a malformed one", async () => {
    const admin = await platformAdmin();
    const built = await buildPlan(admin);
    const owner = await register();
    const subscribed = await subscribe(owner, built.plan.id, built.monthly.id);
    const asOwner = { token: owner.accessToken, tenant: owner.tenant.id };

    const current = await call("/api/v1/subscriptions/active", asOwner);
    expect(current.status, JSON.stringify(current.body)).toBe(200);
    expect(current.body.id).toBe(subscribed.id);
    const bookmark = current.headers.get("x-d1-bookmark");
    expect(bookmark).toMatch(/^[0-9a-f]+(-[0-9a-f]+)*$/i);

    const listed = await call("/api/v1/subscriptions", {
      ...asOwner,
      headers: { "x-d1-bookmark": bookmark as string },
    });
    expect(listed.status, JSON.stringify(listed.body)).toBe(200);
    expect(listed.body.data.map((row: { id: string }) => row.id)).toContain(subscribed.id);
    expect(listed.headers.get("x-d1-bookmark")).toEqual(expect.any(String));

    expectError(
      await call("/api/v1/subscriptions/active", {
        ...asOwner,
        headers: { "x-d1-bookmark": "not a bookmark" },
      }),
      400,
      "x-d1-bookmark must be a bookmark returned by this API",
    );
  });
});
