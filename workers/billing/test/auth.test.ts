import { createExecutionContext, waitOnExecutionContext } from "cloudflare:test";
import { env, exports } from "cloudflare:workers";
import { withinOneWindow } from "@edge-platform/shared/testing/rate-limit-window";
import { base64url, SignJWT } from "jose";
import { describe, expect, it, vi } from "vitest";
import { createApp } from "../src/app.ts";
import { hashPassword, PASSWORD_ITERATIONS } from "../src/platform/domain/password.ts";
import { sha256Hex } from "../src/platform/domain/secrets.ts";
import type { MailSender, PasswordResetMail } from "../src/platform/mail-sender.ts";
import { auditRowsFor } from "./audit-helpers.ts";
import {
  call,
  db,
  expectError,
  type Json,
  login,
  PASSWORD,
  readResult,
  register,
  request,
  UUID_V4,
  uniqueEmail,
  uniqueIp,
  uniqueSlug,
} from "./helpers.ts";

const AUTH = "/api/v1/auth";

describe("POST /auth/register", () => {
  it("creates user, tenant and OWNER membership and returns a session", async () => {
    const email = uniqueEmail();
    const slug = uniqueSlug();
    const result = await call(`${AUTH}/register`, {
      body: {
        email: `  ${email.toUpperCase()} `,
        password: PASSWORD,
        firstName: "Grace",
        lastName: "Hopper",
        tenantName: "Compilers Inc",
        tenantSlug: slug,
      },
    });
    expect(result.status).toBe(201);
    expect(result.body).toEqual({
      accessToken: expect.any(String),
      refreshToken: expect.any(String),
      user: { id: expect.stringMatching(UUID_V4), email, firstName: "Grace", lastName: "Hopper" },
      tenant: { id: expect.stringMatching(UUID_V4), name: "Compilers Inc", slug },
    });
    const membership = await db()
      .prepare("SELECT role FROM memberships WHERE user_id = ? AND tenant_id = ?")
      .bind(result.body.user.id, result.body.tenant.id)
      .first<{ role: string }>();
    expect(membership?.role).toBe("OWNER");
    // Only the hash of the refresh token is stored.
    const stored = await db()
      .prepare("SELECT token_hash FROM refresh_tokens WHERE user_id = ?")
      .bind(result.body.user.id)
      .all<{ token_hash: string }>();
    expect(stored.results).toHaveLength(1);
    expect(stored.results[0]?.token_hash).toMatch(/^[0-9a-f]{64}$/);
    expect(stored.results[0]?.token_hash).not.toBe(result.body.refreshToken);
    const me = await call(`${AUTH}/me`, { token: result.body.accessToken });
    expect(me.status).toBe(200);
    expect(me.body).toMatchObject({ email, isActive: true, isPlatformAdmin: false });
  });

  it("derives a slug from the tenant name when none is given, and retries a taken one", async () => {
    const name = `Derived ${uniqueSlug()}`;
    const first = await register({ tenantName: name, tenantSlug: undefined });
    expect(first.tenant.slug).toMatch(/^derived-t-/);
    const second = await register({ tenantName: name, tenantSlug: undefined });
    expect(second.tenant.slug).not.toBe(first.tenant.slug);
    expect(second.tenant.slug.startsWith(first.tenant.slug)).toBe(true);
  });

  it("409 naming the email when it is taken (any case), and writes nothing", async () => {
    const first = await register();
    const slug = uniqueSlug();
    const result = await call(`${AUTH}/register`, {
      body: {
        email: first.email.toUpperCase(),
        password: PASSWORD,
        firstName: "A",
        lastName: "B",
        tenantName: "X",
        tenantSlug: slug,
      },
    });
    expectError(result, 409, `User with email "${first.email}" already exists`);
    expect(result.body.error).toBe("Conflict");
    const tenant = await db().prepare("SELECT id FROM tenants WHERE slug = ?").bind(slug).first();
    expect(tenant).toBeNull();
  });

  it("409 naming the slug when it is taken, and writes nothing", async () => {
    const first = await register();
    const email = uniqueEmail();
    const result = await call(`${AUTH}/register`, {
      body: {
        email,
        password: PASSWORD,
        firstName: "A",
        lastName: "B",
        tenantName: "X",
        tenantSlug: first.tenant.slug,
      },
    });
    expectError(result, 409, `Tenant with slug "${first.tenant.slug}" already exists`);
    const user = await db().prepare("SELECT id FROM users WHERE email = ?").bind(email).first();
    expect(user).toBeNull();
  });

  it("400 with every problem listed, unknown properties included", async () => {
    const result = await call(`${AUTH}/register`, {
      body: { email: "not-an-email", password: "short", tenantSlug: "9bad", isAdmin: true },
    });
    expectError(result, 400, (message) => {
      expect(message).toEqual(
        expect.arrayContaining([
          "email must be an email",
          "password must be at least 8 characters",
          "firstName is required",
          "lastName is required",
          "tenantName is required",
          "tenantSlug must start with a letter and contain only lowercase letters, numbers, and hyphens",
          "property isAdmin should not exist",
        ]),
      );
    });
  });

  it.each([
    ["no upper case", "lowercase1"],
    ["no lower case", "UPPERCASE1"],
    ["no digit", "NoDigitsHere"],
    ["73 characters", `Aa1${"x".repeat(70)}`],
  ])("rejects a password with %s", async (_label, password) => {
    const result = await call(`${AUTH}/register`, {
      body: {
        email: uniqueEmail(),
        password,
        firstName: "A",
        lastName: "B",
        tenantName: "X",
        tenantSlug: uniqueSlug(),
      },
    });
    expectError(result, 400, (message) => expect(String(message)).toMatch(/^password /));
  });

  it("accepts a 72-character password", async () => {
    const account = await register({ password: `Aa1${"x".repeat(69)}` });
    expect(account.accessToken).toBeTruthy();
  });

  it("malformed JSON: 400 in the billing shape", async () => {
    const result = await call(`${AUTH}/register`, { rawBody: '{"email": "a@b.co",' });
    expectError(result, 400, /^Malformed JSON in request body/);
    expect(result.body.error).toBe("Bad Request");
    const empty = await call(`${AUTH}/register`, {
      rawBody: "",
      headers: { "content-type": "application/json" },
    });
    expectError(empty, 400);
  });
});

describe("POST /auth/login", () => {
  it("returns a token pair with the user, email matched case-insensitively", async () => {
    const account = await register();
    const result = await call(`${AUTH}/login`, {
      body: { email: ` ${account.email.toUpperCase()}`, password: PASSWORD },
    });
    expect(result.status).toBe(200);
    expect(result.body).toEqual({
      accessToken: expect.any(String),
      refreshToken: expect.any(String),
      user: account.user,
    });
  });

  it("unknown email and wrong password: the same 401 body, and the same hashing work", async () => {
    const account = await register();
    const wrong = await call(`${AUTH}/login`, {
      body: { email: account.email, password: "Wrong1234" },
    });
    const unknown = await call(`${AUTH}/login`, {
      body: { email: uniqueEmail(), password: "Wrong1234" },
    });
    expectError(wrong, 401, "Invalid email or password");
    expectError(unknown, 401, "Invalid email or password");
    const strip = ({ correlationId, timestamp, ...rest }: Record<string, unknown>) => rest;
    expect(strip(wrong.body)).toEqual(strip(unknown.body));

    // Equal time comes from equal work: both paths run exactly one PBKDF2
    // derivation at the current iteration count (the unknown address against
    // a dummy hash). Counting the derivations is exact where wall-clock
    // timing on a shared machine is not.
    const derivations = async (email: string) => {
      const spy = vi.spyOn(crypto.subtle, "deriveBits");
      try {
        await call(`${AUTH}/login`, { body: { email, password: "Wrong1234" } });
        return spy.mock.calls.map(([params]) => (params as { iterations?: number }).iterations);
      } finally {
        spy.mockRestore();
      }
    };
    expect(await derivations(account.email)).toEqual([PASSWORD_ITERATIONS]);
    expect(await derivations(uniqueEmail())).toEqual([PASSWORD_ITERATIONS]);
  });

  it("re-hashes a password stored under an older iteration count", async () => {
    const account = await register();
    await db()
      .prepare("UPDATE users SET password_hash = ? WHERE id = ?")
      .bind(await hashPassword(PASSWORD, 1000), account.user.id)
      .run();
    await login(account.email);
    const row = await db()
      .prepare("SELECT password_hash FROM users WHERE id = ?")
      .bind(account.user.id)
      .first<{ password_hash: string }>();
    expect(row?.password_hash.split("$")[1]).toBe(String(PASSWORD_ITERATIONS));
    await login(account.email);
  });

  it("a disabled account is refused, but only after the password checks out", async () => {
    const account = await register();
    await db().prepare("UPDATE users SET is_active = 0 WHERE id = ?").bind(account.user.id).run();
    expectError(
      await call(`${AUTH}/login`, { body: { email: account.email, password: "Wrong1234" } }),
      401,
      "Invalid email or password",
    );
    expectError(
      await call(`${AUTH}/login`, { body: { email: account.email, password: PASSWORD } }),
      401,
      "Account is disabled",
    );
    // Its tokens stop working too.
    expectError(await call(`${AUTH}/me`, { token: account.accessToken }), 401);
  });

  it("400 for a missing password or a bad email", async () => {
    expectError(await call(`${AUTH}/login`, { body: { email: "x" } }), 400, (message) =>
      expect(message).toEqual(["email must be an email", "password is required"]),
    );
  });
});

describe("rate limits on login and forgot-password", () => {
  it("login: 429 with Retry-After after 10 attempts from one IP", () =>
    withinOneWindow(async () => {
      const ip = uniqueIp();
      for (let i = 0; i < 10; i++) {
        const attempt = await call(`${AUTH}/login`, {
          ip,
          body: { email: uniqueEmail(), password: "Wrong1234" },
        });
        expect(attempt.status).toBe(401);
      }
      const limited = await call(`${AUTH}/login`, {
        ip,
        body: { email: uniqueEmail(), password: "x" },
      });
      expectError(limited, 429, /^Rate limit exceeded\. Retry after \d+ seconds\.$/);
      expect(limited.body.error).toBe("Too Many Requests");
      expect(Number(limited.headers.get("Retry-After"))).toBeGreaterThanOrEqual(1);
    }));

  it("login: 429 after 10 attempts on one email from many IPs", () =>
    withinOneWindow(async () => {
      const account = await register();
      for (let i = 0; i < 10; i++) {
        await call(`${AUTH}/login`, { body: { email: account.email, password: "Wrong1234" } });
      }
      const limited = await call(`${AUTH}/login`, {
        body: { email: account.email.toUpperCase(), password: PASSWORD },
      });
      expectError(limited, 429);
      expect(limited.headers.get("Retry-After")).toMatch(/^\d+$/);
    }));

  it("forgot-password: 429 after 5 per IP and after 5 per email", () =>
    withinOneWindow(async () => {
      const ip = uniqueIp();
      for (let i = 0; i < 5; i++) {
        expect(
          (await call(`${AUTH}/forgot-password`, { ip, body: { email: uniqueEmail() } })).status,
        ).toBe(200);
      }
      expectError(
        await call(`${AUTH}/forgot-password`, { ip, body: { email: uniqueEmail() } }),
        429,
      );

      const email = uniqueEmail();
      for (let i = 0; i < 5; i++) {
        expect((await call(`${AUTH}/forgot-password`, { body: { email } })).status).toBe(200);
      }
      const limited = await call(`${AUTH}/forgot-password`, { body: { email } });
      expectError(limited, 429);
      expect(limited.headers.get("Retry-After")).toMatch(/^\d+$/);
    }));
});

describe("access tokens", () => {
  const signWith = (secret: string, claims: Record<string, unknown>, expiresAt: number) =>
    new SignJWT(claims)
      .setProtectedHeader({ alg: "HS256" })
      .setIssuer("billing")
      .setIssuedAt(expiresAt - 900)
      .setExpirationTime(expiresAt)
      .sign(new TextEncoder().encode(secret));

  it("missing, malformed, foreign-key, alg none and expired tokens get 401", async () => {
    const account = await register();
    const claims = { sub: account.user.id, email: account.email, jti: "a".repeat(32), ver: 0 };
    const now = Math.floor(Date.now() / 1000);
    expectError(await call(`${AUTH}/me`), 401, "Authentication required");
    expectError(await call(`${AUTH}/me`, { token: "garbage" }), 401, "Authentication required");
    const foreign = await signWith(
      "another-secret-that-is-long-enough-for-hs256",
      claims,
      now + 600,
    );
    expectError(await call(`${AUTH}/me`, { token: foreign }), 401, "Authentication required");
    const [, payload] = account.accessToken.split(".");
    const none = `${base64url.encode(JSON.stringify({ alg: "none", typ: "JWT" }))}.${payload}.`;
    expectError(await call(`${AUTH}/me`, { token: none }), 401, "Authentication required");
    const expired = await signWith(env.JWT_SECRET, claims, now - 60);
    expectError(await call(`${AUTH}/me`, { token: expired }), 401, "Token has expired");
    // Same key, still valid: accepted (so the failures above are about the token, not the test).
    const valid = await signWith(env.JWT_SECRET, claims, now + 600);
    expect((await call(`${AUTH}/me`, { token: valid })).status).toBe(200);
  });

  it("carries sub, email and a 32-hex jti, HS256, 15 minutes", async () => {
    const account = await register();
    const [header, payload] = account.accessToken
      .split(".")
      .slice(0, 2)
      .map((part) => JSON.parse(new TextDecoder().decode(base64url.decode(part))));
    expect(header.alg).toBe("HS256");
    expect(payload).toMatchObject({ sub: account.user.id, email: account.email });
    expect(payload.jti).toMatch(/^[0-9a-f]{32}$/);
    expect(payload.exp - payload.iat).toBe(900);
  });

  it.each([
    ["missing", undefined],
    ["31 bytes", "x".repeat(31)],
  ])("the worker refuses authenticated routes when JWT_SECRET is %s", async (_label, secret) => {
    const account = await register();
    const app = createApp();
    const brokenEnv = { ...env, JWT_SECRET: secret } as unknown as Env;
    for (const req of [
      request(`${AUTH}/me`, { token: account.accessToken }),
      request(`${AUTH}/login`, { body: { email: account.email, password: PASSWORD } }),
      request("/api/v1/tenants", { token: account.accessToken }),
    ]) {
      const result = await readResult(await app.fetch(req, brokenEnv));
      expectError(result, 503, "Authentication is not configured on this server");
    }
    // Public routes that need no key still answer.
    const health = await app.fetch(request("/health"), brokenEnv);
    expect(health.status).toBe(200);
  });
});

describe("POST /auth/refresh", () => {
  it("rotates: a new pair, and the presented token no longer works", async () => {
    const account = await register();
    const first = await call(`${AUTH}/refresh`, { body: { refreshToken: account.refreshToken } });
    expect(first.status).toBe(200);
    expect(first.body).toEqual({
      accessToken: expect.any(String),
      refreshToken: expect.any(String),
    });
    expect(first.body.refreshToken).not.toBe(account.refreshToken);
    expect((await call(`${AUTH}/me`, { token: first.body.accessToken })).status).toBe(200);
    const second = await call(`${AUTH}/refresh`, {
      body: { refreshToken: first.body.refreshToken },
    });
    expect(second.status).toBe(200);
  });

  const refresh = (refreshToken: string) => call(`${AUTH}/refresh`, { body: { refreshToken } });
  const me = async (accessToken: string) =>
    (await call(`${AUTH}/me`, { token: accessToken })).status;
  const reuseAudits = async (userId: string) =>
    (await auditRowsFor(userId, "auth.sessions_revoked")).filter(
      (row) => JSON.parse(row.changes).reason?.after === "refresh_token_reused",
    );

  it("two concurrent refreshes with one token both succeed with the same new refresh token, and end nothing", async () => {
    const account = await register();
    const other = await login(account.email);
    const results = await Promise.all([1, 2].map(() => refresh(account.refreshToken)));
    for (const result of results) expect(result.status, JSON.stringify(result.body)).toBe(200);
    const [first, second] = results as [Json, Json];
    expect(second.body.refreshToken).toBe(first.body.refreshToken);
    expect(await me(first.body.accessToken)).toBe(200);
    expect(await me(second.body.accessToken)).toBe(200);
    // The user's other session, and the access token the spent refresh token came with, still work.
    expect(await me(other.accessToken)).toBe(200);
    expect(await me(account.accessToken)).toBe(200);
    expect((await refresh(other.refreshToken)).status).toBe(200);
    // The successor rotates as usual.
    expect((await refresh(first.body.refreshToken)).status).toBe(200);
    expect(await reuseAudits(account.user.id)).toEqual([]);
  });

  it("a reuse within the 30 s grace period answers as the first use did; no raw token is stored", async () => {
    const account = await register();
    const first = await refresh(account.refreshToken);
    expect(first.status).toBe(200);
    const again = await refresh(account.refreshToken);
    expect(again.status, JSON.stringify(again.body)).toBe(200);
    expect(again.body.refreshToken).toBe(first.body.refreshToken);
    expect(await me(again.body.accessToken)).toBe(200);
    const stored = await db()
      .prepare("SELECT * FROM refresh_tokens WHERE user_id = ?")
      .bind(account.user.id)
      .all();
    expect(stored.results).toHaveLength(2);
    // One session: the successor is in the first token's family.
    expect(new Set(stored.results.map((row) => row.family_id)).size).toBe(1);
    const text = JSON.stringify(stored.results);
    expect(text).not.toContain(account.refreshToken);
    expect(text).not.toContain(first.body.refreshToken);
    expect(text).toContain(await sha256Hex(first.body.refreshToken));
  });

  it("reuse after the grace period ends that token's session only, and is audited", async () => {
    const account = await register();
    const other = await login(account.email);
    const first = await refresh(account.refreshToken);
    expect(first.status).toBe(200);
    await db()
      .prepare("UPDATE refresh_tokens SET revoked_at = ? WHERE token_hash = ?")
      .bind(new Date(Date.now() - 31_000).toISOString(), await sha256Hex(account.refreshToken))
      .run();

    expectError(await refresh(account.refreshToken), 401, "Refresh token has been revoked");
    // The session the token belonged to is over: its successor no longer refreshes ...
    expectError(await refresh(first.body.refreshToken), 401, "Refresh token has been revoked");
    // ... while the user's other session goes on.
    expect(await me(other.accessToken)).toBe(200);
    const otherNext = await refresh(other.refreshToken);
    expect(otherNext.status, JSON.stringify(otherNext.body)).toBe(200);
    expect(await me(otherNext.body.accessToken)).toBe(200);

    const audits = await reuseAudits(account.user.id);
    expect(audits.length).toBeGreaterThanOrEqual(1);
    expect(audits[0]).toMatchObject({ actor_type: "system", tenant_id: null, target_type: "user" });
    expect(JSON.parse(audits[0]?.changes ?? "{}")).toMatchObject({
      sessions: { after: "revoked" },
      reason: { after: "refresh_token_reused" },
    });
    // Signing in again works.
    await login(account.email);
  });

  it("no grace for a token whose successor was itself rotated or revoked", async () => {
    const account = await register();
    const other = await login(account.email);
    const first = await refresh(account.refreshToken);
    const second = await refresh(first.body.refreshToken);
    expect(second.status).toBe(200);
    expectError(await refresh(account.refreshToken), 401, "Refresh token has been revoked");
    expectError(await refresh(second.body.refreshToken), 401);
    expect(await me(other.accessToken)).toBe(200);

    // A token ended by logout is not honoured either.
    const session = await login(account.email);
    const out = await call(`${AUTH}/logout`, {
      token: session.accessToken,
      body: { refreshToken: session.refreshToken },
    });
    expect(out.status).toBe(200);
    expectError(await refresh(session.refreshToken), 401, "Refresh token has been revoked");
    expect((await refresh(other.refreshToken)).status).toBe(200);
  });

  it("unknown token: 401, not 500; expired: 401; missing: 400", async () => {
    expectError(
      await call(`${AUTH}/refresh`, { body: { refreshToken: "never-issued" } }),
      401,
      "Refresh token not found or has been purged",
    );
    const account = await register();
    await db()
      .prepare("UPDATE refresh_tokens SET expires_at = ? WHERE user_id = ?")
      .bind(new Date(Date.now() - 1000).toISOString(), account.user.id)
      .run();
    expectError(
      await call(`${AUTH}/refresh`, { body: { refreshToken: account.refreshToken } }),
      401,
      "Refresh token has expired",
    );
    expectError(await call(`${AUTH}/refresh`, { body: {} }), 400, (message) =>
      expect(message).toEqual(["refreshToken is required"]),
    );
  });
});

describe("logout and logout-all", () => {
  it("logout revokes the caller's refresh token only, idempotently", async () => {
    const account = await register();
    const victim = await register();
    const out = await call(`${AUTH}/logout`, {
      token: account.accessToken,
      body: { refreshToken: account.refreshToken },
    });
    expect(out.status).toBe(200);
    expect(out.body).toEqual({ message: "Logged out successfully" });
    expect(
      (
        await call(`${AUTH}/logout`, {
          token: account.accessToken,
          body: { refreshToken: account.refreshToken },
        })
      ).status,
    ).toBe(200);
    expectError(
      await call(`${AUTH}/refresh`, { body: { refreshToken: account.refreshToken } }),
      401,
    );
    // Someone else's token is not touched.
    await call(`${AUTH}/logout`, {
      token: account.accessToken,
      body: { refreshToken: victim.refreshToken },
    });
    expect(
      (await call(`${AUTH}/refresh`, { body: { refreshToken: victim.refreshToken } })).status,
    ).toBe(200);
    expectError(await call(`${AUTH}/logout`, { body: { refreshToken: "x" } }), 401);
  });

  it("logout-all ends every refresh and access token of the caller", async () => {
    const account = await register();
    const other = await login(account.email);
    const result = await call(`${AUTH}/logout-all`, { method: "POST", token: account.accessToken });
    expect(result.status).toBe(200);
    expect(result.body).toEqual({ message: "All sessions have been logged out" });
    expectError(
      await call(`${AUTH}/refresh`, { body: { refreshToken: account.refreshToken } }),
      401,
    );
    expectError(await call(`${AUTH}/refresh`, { body: { refreshToken: other.refreshToken } }), 401);
    expectError(await call(`${AUTH}/me`, { token: other.accessToken }), 401);
  });
});

class CapturingMailSender implements MailSender {
  readonly sent: PasswordResetMail[] = [];
  async sendPasswordReset(mail: PasswordResetMail) {
    this.sent.push(mail);
  }
}

async function fetchWith(
  app: ReturnType<typeof createApp>,
  req: Request,
  overrides: Partial<Env> = {},
) {
  const ctx = createExecutionContext();
  const response = await app.fetch(req, { ...env, ...overrides } as Env, ctx);
  const result = await readResult(response);
  await waitOnExecutionContext(ctx);
  return result;
}

describe("forgot and reset password", () => {
  it("same body for known and unknown emails; the token goes to the mail sender only", async () => {
    const account = await register();
    const mail = new CapturingMailSender();
    const app = createApp({ mailSender: mail });
    const known = await fetchWith(
      app,
      request(`${AUTH}/forgot-password`, { body: { email: account.email } }),
    );
    const unknown = await fetchWith(
      app,
      request(`${AUTH}/forgot-password`, { body: { email: uniqueEmail() } }),
    );
    expect(known.status).toBe(200);
    expect(known.body).toEqual(unknown.body);
    expect(known.body).toEqual({ message: expect.any(String) });
    expect(mail.sent).toHaveLength(1);
    expect(mail.sent[0]?.to).toBe(account.email);
    const token = mail.sent[0]!.token;
    expect(token).toMatch(/^[A-Za-z0-9_-]{43}$/);
    const stored = await db()
      .prepare("SELECT token_hash FROM password_reset_tokens WHERE user_id = ?")
      .bind(account.user.id)
      .first<{ token_hash: string }>();
    expect(stored?.token_hash).toMatch(/^[0-9a-f]{64}$/);

    const reset = await call(`${AUTH}/reset-password`, {
      body: { token, newPassword: "N3wPassword" },
    });
    expect(reset.status).toBe(200);
    expectError(
      await call(`${AUTH}/login`, { body: { email: account.email, password: PASSWORD } }),
      401,
    );
    await login(account.email, "N3wPassword");
    // Every earlier session ended.
    expectError(
      await call(`${AUTH}/refresh`, { body: { refreshToken: account.refreshToken } }),
      401,
    );
    expectError(await call(`${AUTH}/me`, { token: account.accessToken }), 401);
    // Single use.
    expectError(
      await call(`${AUTH}/reset-password`, { body: { token, newPassword: "An0therOne" } }),
      400,
      "Reset token has already been used",
    );
  });

  it("the development environment returns the token in the response", async () => {
    const account = await register();
    const app = createApp({ mailSender: new CapturingMailSender() });
    const dev = { ENVIRONMENT: "development" };
    const known = await fetchWith(
      app,
      request(`${AUTH}/forgot-password`, { body: { email: account.email } }),
      dev,
    );
    expect(known.body.resetToken).toMatch(/^[A-Za-z0-9_-]{43}$/);
    const unknown = await fetchWith(
      app,
      request(`${AUTH}/forgot-password`, { body: { email: uniqueEmail() } }),
      dev,
    );
    expect(unknown.body.resetToken).toBeNull();
    // A second request retires the first token.
    const again = await fetchWith(
      app,
      request(`${AUTH}/forgot-password`, { body: { email: account.email } }),
      dev,
    );
    expectError(
      await call(`${AUTH}/reset-password`, {
        body: { token: known.body.resetToken, newPassword: "N3wPassword" },
      }),
      400,
      "Reset token has already been used",
    );
    expect(
      (
        await call(`${AUTH}/reset-password`, {
          body: { token: again.body.resetToken, newPassword: "N3wPassword" },
        })
      ).status,
    ).toBe(200);
  });

  it("unknown, expired and weak: 400", async () => {
    expectError(
      await call(`${AUTH}/reset-password`, { body: { token: "nope", newPassword: "N3wPassword" } }),
      400,
      "Invalid reset token",
    );
    const account = await register();
    const app = createApp({ mailSender: new CapturingMailSender() });
    const issued = await fetchWith(
      app,
      request(`${AUTH}/forgot-password`, { body: { email: account.email } }),
      {
        ENVIRONMENT: "development",
      },
    );
    expectError(
      await call(`${AUTH}/reset-password`, {
        body: { token: issued.body.resetToken, newPassword: "weak" },
      }),
      400,
    );
    await db()
      .prepare("UPDATE password_reset_tokens SET expires_at = ? WHERE user_id = ?")
      .bind(new Date(Date.now() - 1000).toISOString(), account.user.id)
      .run();
    expectError(
      await call(`${AUTH}/reset-password`, {
        body: { token: issued.body.resetToken, newPassword: "N3wPassword" },
      }),
      400,
      "Reset token has expired",
    );
  });
});

describe("POST /auth/change-password", () => {
  it("checks the current password, ends the other sessions and returns a working pair", async () => {
    const account = await register();
    const other = await login(account.email);
    expectError(
      await call(`${AUTH}/change-password`, {
        token: account.accessToken,
        body: { currentPassword: "Wrong1234", newPassword: "N3wPassword" },
      }),
      401,
      "Invalid current password",
    );
    const changed = await call(`${AUTH}/change-password`, {
      token: account.accessToken,
      body: { currentPassword: PASSWORD, newPassword: "N3wPassword" },
    });
    expect(changed.status).toBe(200);
    expect(changed.body).toEqual({
      message: expect.any(String),
      accessToken: expect.any(String),
      refreshToken: expect.any(String),
    });
    expect((await call(`${AUTH}/me`, { token: changed.body.accessToken })).status).toBe(200);
    expect(
      (await call(`${AUTH}/refresh`, { body: { refreshToken: changed.body.refreshToken } })).status,
    ).toBe(200);
    expectError(await call(`${AUTH}/me`, { token: other.accessToken }), 401);
    expectError(await call(`${AUTH}/refresh`, { body: { refreshToken: other.refreshToken } }), 401);
    await login(account.email, "N3wPassword");
  });

  it("validates the new password and needs a token", async () => {
    const account = await register();
    expectError(
      await call(`${AUTH}/change-password`, {
        token: account.accessToken,
        body: { currentPassword: PASSWORD, newPassword: "alllowercase1" },
      }),
      400,
    );
    expectError(
      await call(`${AUTH}/change-password`, {
        body: { currentPassword: PASSWORD, newPassword: "N3wPassword" },
      }),
      401,
    );
  });
});

describe("direct fetch through the exported worker", () => {
  it("is the same app", async () => {
    const response = await exports.default.fetch("http://billing/api/v1/auth/me");
    expect(response.status).toBe(401);
  });
});
