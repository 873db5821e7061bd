import { describe, expect, it } from "vitest";
import { devAdminCredentials, send } from "./lib/billing-api.ts";

const suffix = `${Date.now().toString(36)}${Math.random().toString(36).slice(2, 6)}`;

describe("accounts against the running stack", () => {
  it("register, login, refresh twice, reuse ends its session, reset the password, keys, isolation", async () => {
    const email = `e2e-${suffix}@example.com`;
    const registered = await send("/auth/register", {
      body: {
        email,
        password: "E2ePassw0rd",
        firstName: "End",
        lastName: "ToEnd",
        tenantName: "E2E Co",
        tenantSlug: `e2e-${suffix}`,
      },
    });
    expect(registered.status).toBe(201);
    const tenantId = registered.body.tenant.id as string;

    const session = await send("/auth/login", { body: { email, password: "E2ePassw0rd" } });
    expect(session.status).toBe(200);
    const first = await send("/auth/refresh", {
      body: { refreshToken: session.body.refreshToken },
    });
    expect(first.status).toBe(200);
    const second = await send("/auth/refresh", { body: { refreshToken: first.body.refreshToken } });
    expect(second.status).toBe(200);
    expect((await send("/auth/me", { token: second.body.accessToken })).status).toBe(200);

    // Reusing the first refresh token, whose successor was itself spent, ends its session.
    const reuse = await send("/auth/refresh", {
      body: { refreshToken: session.body.refreshToken },
    });
    expect(reuse.status).toBe(401);
    expect(reuse.body).toMatchObject({
      statusCode: 401,
      message: "Refresh token has been revoked",
    });
    expect(
      (await send("/auth/refresh", { body: { refreshToken: second.body.refreshToken } })).status,
    ).toBe(401);
    // The session registration started goes on.
    expect((await send("/auth/me", { token: registered.body.accessToken })).status).toBe(200);
    const registeredRefresh = await send("/auth/refresh", {
      body: { refreshToken: registered.body.refreshToken },
    });
    expect(registeredRefresh.status).toBe(200);

    // The dev stack runs with ENVIRONMENT=development, so the reset token comes back.
    const forgot = await send("/auth/forgot-password", { body: { email } });
    expect(forgot.status).toBe(200);
    expect(forgot.body.resetToken).toMatch(/^[A-Za-z0-9_-]{43}$/);
    const reset = await send("/auth/reset-password", {
      body: { token: forgot.body.resetToken, newPassword: "N3wE2ePassword" },
    });
    expect(reset.status).toBe(200);
    expect((await send("/auth/login", { body: { email, password: "E2ePassw0rd" } })).status).toBe(
      401,
    );
    const relogged = await send("/auth/login", { body: { email, password: "N3wE2ePassword" } });
    expect(relogged.status).toBe(200);
    const token = relogged.body.accessToken as string;

    const created = await send("/api-keys", { token, tenant: tenantId, body: { name: "e2e" } });
    expect(created.status).toBe(201);
    const current = await send("/api-keys/current", { token: created.body.key });
    expect(current.status).toBe(200);
    expect(current.body.tenantId).toBe(tenantId);
    const revoked = await send(`/api-keys/${created.body.id}`, {
      method: "DELETE",
      token,
      tenant: tenantId,
    });
    expect(revoked.status).toBe(200);
    expect((await send("/api-keys/current", { token: created.body.key })).status).toBe(401);
    expect(
      (await send(`/api-keys/${created.body.id}`, { method: "DELETE", token, tenant: tenantId }))
        .status,
    ).toBe(409);

    // Someone else cannot reach this tenant.
    const intruder = await send("/auth/register", {
      body: {
        email: `intruder-${suffix}@example.com`,
        password: "Intrud3rPass",
        firstName: "I",
        lastName: "N",
        tenantName: "Elsewhere",
      },
    });
    expect(intruder.status).toBe(201);
    const attempt = await send(`/tenants/${tenantId}`, {
      token: intruder.body.accessToken,
      tenant: tenantId,
    });
    expect(attempt.status).toBe(403);
    expect(attempt.body).toMatchObject({ statusCode: 403, error: "Forbidden" });
    expect(
      (await send("/api-keys", { token: intruder.body.accessToken, tenant: tenantId })).status,
    ).toBe(403);
  });

  it("the seeded platform admin signs in and owns the demo tenant", async () => {
    const login = await send("/auth/login", { body: devAdminCredentials() });
    expect(login.status).toBe(200);
    const me = await send("/auth/me", { token: login.body.accessToken });
    expect(me.body.isPlatformAdmin).toBe(true);
    const tenant = await send("/tenants/slug/acme", { token: login.body.accessToken });
    expect(tenant.body).toMatchObject({ slug: "acme", role: "OWNER" });
  });
});
