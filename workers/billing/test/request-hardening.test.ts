import { env } from "cloudflare:workers";
import { SignJWT } from "jose";
import { beforeAll, describe, expect, it } from "vitest";
import { createPlan, createPrice, platformAdmin } from "./catalog-helpers.ts";
import { type Account, call, expectError, register } from "./helpers.ts";

// Small holes a black-box client found.

let admin: Account;
beforeAll(async () => {
  admin = await platformAdmin();
});

describe("access tokens must expire", () => {
  it("a correctly signed token without exp is a 401", async () => {
    const account = await register();
    const key = new TextEncoder().encode(env.JWT_SECRET);
    const claims = { email: account.email, ver: 0 };
    const sign = (withExp: boolean) => {
      const jwt = new SignJWT(claims)
        .setProtectedHeader({ alg: "HS256", typ: "JWT" })
        .setSubject(account.user.id)
        .setJti("a".repeat(32))
        .setIssuer("billing")
        .setIssuedAt();
      return (withExp ? jwt.setExpirationTime("5m") : jwt).sign(key);
    };
    // The same claims with exp are accepted, so the 401 is about exp alone.
    expect((await call("/api/v1/auth/me", { token: await sign(true) })).status).toBe(200);
    expectError(await call("/api/v1/auth/me", { token: await sign(false) }), 401);
  });
});

describe("PATCH /plans/:planId/prices/:id validates its body", () => {
  async function price() {
    const plan = await createPlan(admin);
    const created = await createPrice(admin, plan.id, { amount: 1000 });
    return { path: `/api/v1/plans/${plan.id}/prices/${created.id}`, planId: plan.id };
  }
  const patch = (
    path: string,
    options: { rawBody?: string; body?: unknown; headers?: Record<string, string> },
  ) => call(path, { method: "PATCH", token: admin.accessToken, ...options });
  const stillActive = async (planId: string) =>
    (await call(`/api/v1/plans/${planId}/prices`)).body.data[0]?.isActive;

  it("malformed JSON, a megabyte of text and unknown fields are 400 and change nothing", async () => {
    const { path, planId } = await price();
    expectError(await patch(path, { rawBody: "{" }), 400);
    expectError(
      await patch(path, {
        rawBody: "x".repeat(1024 * 1024),
        headers: { "content-type": "text/plain" },
      }),
      400,
    );
    expectError(await patch(path, { rawBody: "x".repeat(1024 * 1024) }), 400);
    expectError(await patch(path, { body: { isActive: false, colour: "red" } }), 400, (message) =>
      expect(message).toContain("property colour should not exist"),
    );
    expectError(await patch(path, { body: { isActive: true } }), 400);
    expectError(await patch(path, { body: { trialDays: 366 } }), 400);
    expectError(await patch(path, { body: { trialDays: -1 } }), 400);
    expectError(await patch(path, { body: {} }), 400);
    expectError(await patch(path, { body: [] }), 400);
    expect(await stillActive(planId)).toBe(true);
  });

  it("sets the trial, and deactivates with isActive false or with no body at all", async () => {
    const { path, planId } = await price();
    const trial = await patch(path, { body: { trialDays: 21 } });
    expect(trial.status).toBe(200);
    expect(trial.body).toMatchObject({ isActive: true, trialDays: 21 });
    expect((await call(`/api/v1/plans/${planId}/prices`)).body.data[0].trialDays).toBe(21);
    expect((await patch(path, { body: { trialDays: null } })).body.trialDays).toBeNull();
    const off = await patch(path, { body: { isActive: false } });
    expect(off.body).toMatchObject({ isActive: false });
    const other = await price();
    expect((await patch(other.path, {})).body.isActive).toBe(false);
  });

  it("POST takes trialDays 0-365 and returns it on the price", async () => {
    const plan = await createPlan(admin);
    const created = await createPrice(admin, plan.id, { amount: 500, trialDays: 30 });
    expect(created.trialDays).toBe(30);
    expectError(
      await call(`/api/v1/plans/${plan.id}/prices`, {
        token: admin.accessToken,
        body: { interval: "ANNUALLY", amount: 5000, trialDays: 400 },
      }),
      400,
    );
    const plain = await createPrice(admin, plan.id, { interval: "ANNUALLY", amount: 5000 });
    expect(plain.trialDays).toBeNull();
  });
});
