import { env } from "cloudflare:workers";
import { ApiError } from "@edge-platform/shared/http/api-error";
import { beforeAll, describe, expect, it } from "vitest";
import { decryptWebhookSecret } from "../src/notifications/domain/webhook-secret.ts";
import { WebhookEndpointService } from "../src/notifications/webhook-endpoint-service.ts";
import { auditRowsFor, onlyAuditRow } from "./audit-helpers.ts";
import { platformAdmin } from "./catalog-helpers.ts";
import { type Account, addMember, call, expectError, register } from "./helpers.ts";

// The webhook-endpoint routes as a client calls them: validation in the
// billing error shape, the secret shown once, roles, tenant isolation,
// Idempotency-Key replays and the audit rows written with each change.

const BASE = "/api/v1/webhook-endpoints";
const SECRET = /^whsec_[A-Za-z0-9+/]{43}=$/;
let owner: Account;

beforeAll(async () => {
  owner = await register();
});

function as(account: { accessToken: string }, tenantId = owner.tenant.id) {
  return (path: string, options: Parameters<typeof call>[1] = {}) =>
    call(`${BASE}${path}`, { token: account.accessToken, tenant: tenantId, ...options });
}

async function createEndpoint(account: Account, body: Record<string, unknown> = {}) {
  const result = await as(account, account.tenant.id)("", {
    body: { url: "https://hooks.example.com/billing", eventTypes: ["invoice.finalized"], ...body },
  });
  expect(result.status, JSON.stringify(result.body)).toBe(201);
  return result.body;
}

describe("POST /webhook-endpoints", () => {
  it("creates an endpoint and shows its secret once; GET never shows it, D1 holds it encrypted", async () => {
    const created = await createEndpoint(owner, {
      eventTypes: ["invoice.paid", "invoice.finalized", "invoice.paid"],
      description: "ERP",
    });
    expect(created).toMatchObject({
      tenantId: owner.tenant.id,
      url: "https://hooks.example.com/billing",
      description: "ERP",
      eventTypes: ["invoice.finalized", "invoice.paid"],
      enabled: true,
      failingSince: null,
      disabledReason: null,
    });
    expect(created.secret).toMatch(SECRET);

    const one = await as(owner)(`/${created.id}`);
    expect(one.status).toBe(200);
    expect(one.body).not.toHaveProperty("secret");
    expect(JSON.stringify(one.body)).not.toContain(created.secret);
    const list = await as(owner)("");
    expect(list.status).toBe(200);
    expect(list.body.meta).toMatchObject({ page: 1, limit: 20 });
    expect(list.body.data.map((row: { id: string }) => row.id)).toContain(created.id);
    expect(JSON.stringify(list.body)).not.toContain(created.secret);

    const row = await env.DB.prepare("SELECT secret_ciphertext FROM webhook_endpoints WHERE id = ?")
      .bind(created.id)
      .first<{ secret_ciphertext: string }>();
    expect(row?.secret_ciphertext).not.toContain(created.secret.slice(6));
    expect(
      await decryptWebhookSecret(env.WEBHOOK_SECRET_KEY, created.id, row?.secret_ciphertext ?? ""),
    ).toBe(created.secret);

    const audit = await onlyAuditRow(created.id, "webhook_endpoint.created");
    expect(audit).toMatchObject({ tenant_id: owner.tenant.id, actor_id: owner.user.id });
    expect(audit.changes.url).toEqual({ after: "https://hooks.example.com/billing" });
    expect(JSON.stringify(audit)).not.toContain(created.secret);
  });

  it("a tenant has at most 20 endpoints", async () => {
    const crowded = await register();
    for (let index = 0; index < 20; index++) {
      await createEndpoint(crowded, { url: `https://hooks.example.com/${index}` });
    }
    expectError(
      await as(crowded, crowded.tenant.id)("", {
        body: { url: "https://hooks.example.com/21", eventTypes: ["*"] },
      }),
      409,
      /at most 20 webhook endpoints/,
    );
  });

  it('accepts ["*"] for every event type', async () => {
    const created = await createEndpoint(owner, { eventTypes: ["invoice.paid", "*"] });
    expect(created.eventTypes).toEqual(["*"]);
  });

  it("refuses bad bodies with the billing error shape, writing nothing", async () => {
    const before = await env.DB.prepare(
      "SELECT count(*) AS n FROM webhook_endpoints WHERE tenant_id = ?",
    )
      .bind(owner.tenant.id)
      .first<{ n: number }>();
    const cases: Array<[unknown, RegExp]> = [
      [{ url: "http://hooks.example.com/", eventTypes: ["invoice.paid"] }, /url must use https/],
      [{ url: "https://169.254.169.254/latest", eventTypes: ["invoice.paid"] }, /link-local/],
      [{ url: "https://0x7f000001/", eventTypes: ["invoice.paid"] }, /loopback/],
      [{ url: "https://[::ffff:10.0.0.1]/", eventTypes: ["invoice.paid"] }, /IPv4-mapped/],
      [{ url: "https://localhost/", eventTypes: ["invoice.paid"] }, /local name/],
      [{ url: "http://127.0.0.1:8080/", eventTypes: ["invoice.paid"] }, /https/],
      [{ url: "not a url", eventTypes: ["invoice.paid"] }, /absolute URL/],
      [{ url: "https://hooks.example.com/", eventTypes: [] }, /eventTypes must be a non-empty/],
      [
        { url: "https://hooks.example.com/", eventTypes: ["invoice.created"] },
        /eventTypes must be a non-empty list of: invoice.finalized/,
      ],
      [{ url: "https://hooks.example.com/" }, /eventTypes is required/],
      [
        { url: "https://hooks.example.com/", eventTypes: ["*"], secret: "mine" },
        /property secret should not exist/,
      ],
      [
        { url: "https://hooks.example.com/", eventTypes: ["*"], enabled: "yes" },
        /enabled must be a boolean/,
      ],
    ];
    for (const [body, message] of cases) {
      const result = await as(owner)("", { body });
      expectError(result, 400, (text) =>
        expect(JSON.stringify(text), JSON.stringify(body)).toMatch(message),
      );
    }
    const after = await env.DB.prepare(
      "SELECT count(*) AS n FROM webhook_endpoints WHERE tenant_id = ?",
    )
      .bind(owner.tenant.id)
      .first<{ n: number }>();
    expect(after?.n).toBe(before?.n);
  });

  it("a replay of the same Idempotency-Key answers without the secret and creates nothing", async () => {
    const key = `wh-${crypto.randomUUID()}`;
    const body = { url: "https://hooks.example.com/replay", eventTypes: ["invoice.voided"] };
    const first = await as(owner)("", { body, headers: { "Idempotency-Key": key } });
    expect(first.status).toBe(201);
    expect(first.body.secret).toMatch(SECRET);
    const replay = await as(owner)("", { body, headers: { "Idempotency-Key": key } });
    expect(replay.status).toBe(201);
    expect(replay.headers.get("Idempotent-Replayed")).toBe("true");
    expect(replay.body.id).toBe(first.body.id);
    expect(replay.body).not.toHaveProperty("secret");
    expect(replay.body.notice).toMatch(/shown only in the first response/);
    const rows = await env.DB.prepare(
      "SELECT count(*) AS n FROM webhook_endpoints WHERE url = ? AND tenant_id = ?",
    )
      .bind("https://hooks.example.com/replay", owner.tenant.id)
      .first<{ n: number }>();
    expect(rows?.n).toBe(1);
    const stored = await env.DB.prepare("SELECT response_body FROM idempotency_keys WHERE key = ?")
      .bind(key)
      .first<{ response_body: string }>();
    expect(stored?.response_body).not.toContain(first.body.secret);
  });
});

describe("without WEBHOOK_SECRET_KEY", () => {
  it("creating or rotating is a 503 and writes nothing (the secret could not be stored)", async () => {
    const service = new WebhookEndpointService(
      env.DB,
      env.WEBHOOK_DELIVERIES_QUEUE,
      { allowHttpLocalhost: false },
      "too-short",
    );
    const context = {
      tenant: { id: owner.tenant.id } as never,
      role: "OWNER" as const,
      platformAdmin: false,
    };
    const before = await env.DB.prepare("SELECT count(*) AS n FROM webhook_endpoints").first<{
      n: number;
    }>();
    const refused = await service
      .create(context, { url: "https://hooks.example.com/nokey", eventTypes: ["*"] })
      .catch((error: unknown) => error);
    expect(refused).toBeInstanceOf(ApiError);
    expect(refused).toMatchObject({ status: 503 });
    const after = await env.DB.prepare("SELECT count(*) AS n FROM webhook_endpoints").first<{
      n: number;
    }>();
    expect(after?.n).toBe(before?.n);
  });
});

describe("who may do what", () => {
  it("OWNER and ADMIN manage; BILLING reads; DEVELOPER gets nothing; platform admins act with x-tenant-id", async () => {
    const tenantOwner = await register();
    const admin = await addMember(tenantOwner, "ADMIN");
    const billing = await addMember(tenantOwner, "BILLING");
    const developer = await addMember(tenantOwner, "DEVELOPER");
    const tenantId = tenantOwner.tenant.id;
    const body = { url: "https://hooks.example.com/roles", eventTypes: ["invoice.paid"] };

    const byAdmin = await as(admin, tenantId)("", { body });
    expect(byAdmin.status).toBe(201);
    const id = byAdmin.body.id;

    expectError(await as(billing, tenantId)("", { body }), 403, /OWNER, ADMIN/);
    expectError(
      await as(billing, tenantId)(`/${id}`, { method: "PATCH", body: { enabled: false } }),
      403,
    );
    expectError(await as(billing, tenantId)(`/${id}`, { method: "DELETE" }), 403);
    expect((await as(billing, tenantId)(`/${id}`)).status).toBe(200);
    expect((await as(billing, tenantId)(`/${id}/deliveries`)).status).toBe(200);

    expectError(await as(developer, tenantId)(""), 403);
    expectError(await as(developer, tenantId)("", { body }), 403);

    const platform = await platformAdmin();
    const byPlatform = await as(platform, tenantId)("", { body });
    expect(byPlatform.status).toBe(201);
    expect(byPlatform.body.tenantId).toBe(tenantId);
    const audit = await onlyAuditRow(byPlatform.body.id, "webhook_endpoint.created");
    expect(audit.actor_type).toBe("platform_admin");

    expectError(await call(BASE, { tenant: tenantId }), 401);
  });

  it("tenants are isolated: another tenant's endpoint is a 404 under one's own tenant, a 403 under theirs", async () => {
    const mine = await createEndpoint(owner);
    const stranger = await register();
    for (const [path, options] of [
      [`/${mine.id}`, {}],
      [`/${mine.id}/deliveries`, {}],
      [`/${mine.id}`, { method: "PATCH", body: { enabled: false } }],
      [`/${mine.id}`, { method: "DELETE" }],
      [`/${mine.id}/rotate-secret`, { method: "POST" }],
      [`/${mine.id}/send-example`, { method: "POST" }],
    ] as const) {
      expectError(
        await as(stranger, stranger.tenant.id)(path, options),
        404,
        `Webhook endpoint with ID "${mine.id}" not found`,
      );
      expectError(await as(stranger, owner.tenant.id)(path, options), 403);
    }
    const theirs = await as(stranger, stranger.tenant.id)("");
    expect(theirs.body.data).toEqual([]);
    expect((await as(owner)(`/${mine.id}`)).body.enabled).toBe(true);
  });
});

describe("PATCH, DELETE and rotate-secret", () => {
  it("changes fields with an audit row of what changed; enabled: true clears a disable reason", async () => {
    const created = await createEndpoint(owner);
    const patched = await as(owner)(`/${created.id}`, {
      method: "PATCH",
      body: { eventTypes: ["payment.failed"], description: "Ops", enabled: false },
    });
    expect(patched.status, JSON.stringify(patched.body)).toBe(200);
    expect(patched.body).toMatchObject({
      eventTypes: ["payment.failed"],
      description: "Ops",
      enabled: false,
      disabledReason: "Disabled by the tenant",
    });
    const audit = await onlyAuditRow(created.id, "webhook_endpoint.updated");
    expect(audit.changes).toMatchObject({
      eventTypes: { before: ["invoice.finalized"], after: ["payment.failed"] },
      enabled: { before: true, after: false },
    });

    await env.DB.prepare(
      "UPDATE webhook_endpoints SET disabled_reason = 'failing', failing_since = '2026-01-01T00:00:00.000Z' WHERE id = ?",
    )
      .bind(created.id)
      .run();
    const enabled = await as(owner)(`/${created.id}`, {
      method: "PATCH",
      body: { enabled: true },
    });
    expect(enabled.body).toMatchObject({
      enabled: true,
      disabledReason: null,
      disabledAt: null,
      failingSince: null,
    });

    expectError(await as(owner)(`/${created.id}`, { method: "PATCH", body: {} }), 400, (message) =>
      expect(JSON.stringify(message)).toMatch(/at least one of/),
    );
    expectError(
      await as(owner)(`/${created.id}`, { method: "PATCH", body: { url: "https://10.0.0.1/" } }),
      400,
      (message) => expect(JSON.stringify(message)).toMatch(/private/),
    );
    expectError(await as(owner)("/not-a-uuid"), 400);
  });

  it("DELETE removes it from the API (404 after), with an audit row", async () => {
    const created = await createEndpoint(owner);
    const deleted = await as(owner)(`/${created.id}`, { method: "DELETE" });
    expect(deleted.status).toBe(204);
    expectError(await as(owner)(`/${created.id}`), 404);
    expectError(await as(owner)(`/${created.id}`, { method: "DELETE" }), 404);
    expect(await auditRowsFor(created.id, "webhook_endpoint.deleted")).toHaveLength(1);
  });

  it("rotate-secret returns a new secret once; the stored one changes with it", async () => {
    const created = await createEndpoint(owner);
    const rotated = await as(owner)(`/${created.id}/rotate-secret`, { method: "POST" });
    expect(rotated.status, JSON.stringify(rotated.body)).toBe(200);
    expect(rotated.body.secret).toMatch(SECRET);
    expect(rotated.body.secret).not.toBe(created.secret);
    const row = await env.DB.prepare("SELECT secret_ciphertext FROM webhook_endpoints WHERE id = ?")
      .bind(created.id)
      .first<{ secret_ciphertext: string }>();
    expect(
      await decryptWebhookSecret(env.WEBHOOK_SECRET_KEY, created.id, row?.secret_ciphertext ?? ""),
    ).toBe(rotated.body.secret);
    const audit = await onlyAuditRow(created.id, "webhook_endpoint.secret_rotated");
    expect(JSON.stringify(audit)).not.toContain(rotated.body.secret);
  });

  it("the replaced secret keeps signing for 24 hours by default, for the hours asked, or not at all", async () => {
    const created = await createEndpoint(owner);
    expect(created.previousSecretExpiresAt).toBeNull();
    const before = Date.now();
    const rotated = await as(owner)(`/${created.id}/rotate-secret`, { method: "POST" });
    expect(rotated.status, JSON.stringify(rotated.body)).toBe(200);
    const overlapEnd = Date.parse(rotated.body.previousSecretExpiresAt);
    expect(overlapEnd - before).toBeGreaterThanOrEqual(24 * 3600_000);
    expect(overlapEnd - Date.now()).toBeLessThanOrEqual(24 * 3600_000);
    const stored = await env.DB.prepare(
      "SELECT previous_secret_ciphertext AS previous FROM webhook_endpoints WHERE id = ?",
    )
      .bind(created.id)
      .first<{ previous: string }>();
    expect(
      await decryptWebhookSecret(env.WEBHOOK_SECRET_KEY, created.id, stored?.previous ?? ""),
    ).toBe(created.secret);
    expect((await as(owner)(`/${created.id}`)).body.previousSecretExpiresAt).toBe(
      rotated.body.previousSecretExpiresAt,
    );

    const twoHours = await as(owner)(`/${created.id}/rotate-secret`, {
      body: { previousSecretExpiresInHours: 2 },
    });
    expect(Date.parse(twoHours.body.previousSecretExpiresAt) - Date.now()).toBeLessThanOrEqual(
      2 * 3600_000,
    );
    const atOnce = await as(owner)(`/${created.id}/rotate-secret`, {
      body: { previousSecretExpiresInHours: 0 },
    });
    expect(atOnce.body.previousSecretExpiresAt).toBeNull();
    const audit = await auditRowsFor(created.id, "webhook_endpoint.secret_rotated");
    expect(audit).toHaveLength(3);

    for (const body of [
      { previousSecretExpiresInHours: -1 },
      { previousSecretExpiresInHours: 169 },
      { previousSecretExpiresInHours: 1.5 },
      { previousSecretExpiresInHours: "24" },
      { overlap: 1 },
    ]) {
      expectError(await as(owner)(`/${created.id}/rotate-secret`, { body }), 400, (message) =>
        expect(JSON.stringify(message)).toMatch(/previousSecretExpiresInHours|overlap/),
      );
    }
  });
});

describe("POST /webhook-endpoints/:id/send-example", () => {
  it("queues one webhook.test delivery to this endpoint only, in its delivery log", async () => {
    const target = await createEndpoint(owner);
    const other = await createEndpoint(owner, { eventTypes: ["*"] });
    const sent = await as(owner)(`/${target.id}/send-example`, { method: "POST" });
    expect(sent.status, JSON.stringify(sent.body)).toBe(202);
    expect(sent.body).toMatchObject({
      endpointId: target.id,
      eventType: "webhook.test",
      status: "PENDING",
      attemptCount: 0,
    });
    expect(sent.body.eventId).toMatch(/^evt_/);
    const log = await as(owner)(`/${target.id}/deliveries`);
    expect(log.body.data.map((row: { id: string }) => row.id)).toContain(sent.body.id);
    const elsewhere = await as(owner)(`/${other.id}/deliveries`);
    expect(elsewhere.body.data).toEqual([]);

    await as(owner)(`/${target.id}`, { method: "PATCH", body: { enabled: false } });
    expectError(await as(owner)(`/${target.id}/send-example`, { method: "POST" }), 409);
    expectError(await as(owner)(`/${crypto.randomUUID()}/send-example`, { method: "POST" }), 404);
  });
});
