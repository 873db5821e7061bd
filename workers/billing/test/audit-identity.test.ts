import { describe, expect, it } from "vitest";
import { auditRowsFor, failAuditFor, listAudit, onlyAuditRow } from "./audit-helpers.ts";
import { platformAdmin } from "./catalog-helpers.ts";
import {
  addMember,
  call,
  db,
  expectError,
  login,
  PASSWORD,
  register,
  UUID_V4,
  uniqueEmail,
} from "./helpers.ts";

// Audit rows for access changes: sessions and passwords, memberships,
// tenants and API keys, each written in the batch of its change.

const API = "/api/v1";

describe("audit trail: access", () => {
  it("api_key.created and api_key.revoked name the actor, the tenant and no secret", async () => {
    const owner = await register();
    const created = await call(`${API}/api-keys`, {
      token: owner.accessToken,
      tenant: owner.tenant.id,
      body: { name: "audited" },
      headers: { "x-correlation-id": "5b0b2c5e-8d1c-4c53-9a53-2b1d6a0e9f11" },
    });
    expect(created.status).toBe(201);
    const row = await onlyAuditRow(created.body.id, "api_key.created");
    expect(row).toMatchObject({
      tenant_id: owner.tenant.id,
      actor_type: "user",
      actor_id: owner.user.id,
      target_type: "api_key",
      correlation_id: "5b0b2c5e-8d1c-4c53-9a53-2b1d6a0e9f11",
    });
    expect(row.id).toMatch(UUID_V4);
    expect(row.changes.name).toEqual({ after: "audited" });
    const everything = JSON.stringify(await auditRowsFor(created.body.id));
    expect(everything).not.toContain(created.body.key);
    const stored = await db()
      .prepare("SELECT key_hash FROM api_keys WHERE id = ?")
      .bind(created.body.id)
      .first<{ key_hash: string }>();
    expect(everything).not.toContain(stored?.key_hash);

    const revoke = () =>
      call(`${API}/api-keys/${created.body.id}`, {
        method: "DELETE",
        token: owner.accessToken,
        tenant: owner.tenant.id,
      });
    expect((await revoke()).status).toBe(200);
    expectError(await revoke(), 409);
    const revoked = await onlyAuditRow(created.body.id, "api_key.revoked");
    expect(revoked.changes.status).toEqual({ after: "REVOKED" });
  });

  it("a refused audit insert rolls the change back: the key stays active", async () => {
    const owner = await register();
    const created = await call(`${API}/api-keys`, {
      token: owner.accessToken,
      tenant: owner.tenant.id,
      body: { name: "atomic" },
    });
    const restore = await failAuditFor(created.body.id);
    try {
      const revoke = await call(`${API}/api-keys/${created.body.id}`, {
        method: "DELETE",
        token: owner.accessToken,
        tenant: owner.tenant.id,
      });
      expect(revoke.status).toBe(500);
    } finally {
      await restore();
    }
    const key = await db()
      .prepare("SELECT status FROM api_keys WHERE id = ?")
      .bind(created.body.id)
      .first<{ status: string }>();
    expect(key?.status).toBe("ACTIVE");
    expect(await auditRowsFor(created.body.id, "api_key.revoked")).toHaveLength(0);
  });

  it("membership.added, membership.role_changed and membership.removed", async () => {
    const owner = await register();
    const member = await addMember(owner, "DEVELOPER");
    const added = await onlyAuditRow(member.id, "membership.added");
    expect(added).toMatchObject({ tenant_id: owner.tenant.id, actor_id: owner.user.id });
    expect(added.changes.role).toEqual({ after: "DEVELOPER" });
    expect(JSON.stringify(added.changes)).not.toContain(PASSWORD);

    const path = `${API}/tenants/${owner.tenant.id}/members/${member.id}`;
    const asOwner = { token: owner.accessToken, tenant: owner.tenant.id };
    expect(
      (await call(path, { ...asOwner, method: "PATCH", body: { role: "ADMIN" } })).status,
    ).toBe(200);
    const changed = await onlyAuditRow(member.id, "membership.role_changed");
    expect(changed.changes).toEqual({ role: { before: "DEVELOPER", after: "ADMIN" } });

    // The last OWNER cannot be demoted: nothing changes, nothing is recorded.
    const selfDemotion = await call(`${API}/tenants/${owner.tenant.id}/members/${owner.user.id}`, {
      ...asOwner,
      method: "PATCH",
      body: { role: "ADMIN" },
    });
    expectError(selfDemotion, 409);
    expect(await auditRowsFor(owner.user.id, "membership.role_changed")).toHaveLength(0);

    expect((await call(path, { ...asOwner, method: "DELETE" })).status).toBe(200);
    const removed = await onlyAuditRow(member.id, "membership.removed");
    expect(removed.changes).toEqual({ role: { before: "ADMIN", after: null } });
  });

  it("tenant.updated records before and after; tenant.deleted once", async () => {
    const owner = await register();
    const asOwner = { token: owner.accessToken, tenant: owner.tenant.id };
    const path = `${API}/tenants/${owner.tenant.id}`;
    const patched = await call(path, { ...asOwner, method: "PATCH", body: { name: "Renamed" } });
    expect(patched.status).toBe(200);
    const updated = await onlyAuditRow(owner.tenant.id, "tenant.updated");
    expect(updated.changes).toEqual({ name: { before: owner.tenant.name, after: "Renamed" } });
    expect((await call(path, { ...asOwner, method: "DELETE" })).status).toBe(200);
    const deleted = await onlyAuditRow(owner.tenant.id, "tenant.deleted");
    expect(deleted.changes.status).toEqual({ before: "ACTIVE", after: "CANCELLED" });
  });

  it("auth.password_changed, auth.sessions_revoked and auth.password_reset", async () => {
    const account = await register();
    const changed = await call(`${API}/auth/change-password`, {
      token: account.accessToken,
      body: { currentPassword: PASSWORD, newPassword: "N3wPassword" },
    });
    expect(changed.status, JSON.stringify(changed.body)).toBe(200);
    const passwordRow = await onlyAuditRow(account.user.id, "auth.password_changed");
    expect(passwordRow).toMatchObject({
      actor_type: "user",
      actor_id: account.user.id,
      tenant_id: null,
    });
    const serialized = JSON.stringify(await auditRowsFor(account.user.id));
    expect(serialized).not.toContain("N3wPassword");
    expect(serialized).not.toContain("pbkdf2");

    const session = await login(account.email, "N3wPassword");
    expect(
      (await call(`${API}/auth/logout-all`, { token: session.accessToken, body: {} })).status,
    ).toBe(200);
    const revoked = await onlyAuditRow(account.user.id, "auth.sessions_revoked");
    expect(revoked.changes.reason).toEqual({ after: "logout_all" });

    // A reset token issued the way forgot-password stores it (only its hash).
    const raw = `reset-${crypto.randomUUID()}`;
    const digest = await crypto.subtle.digest("SHA-256", new TextEncoder().encode(raw));
    const hash = Array.from(new Uint8Array(digest), (b) => b.toString(16).padStart(2, "0")).join(
      "",
    );
    await db()
      .prepare(
        "INSERT INTO password_reset_tokens (id, user_id, token_hash, expires_at) VALUES (?, ?, ?, ?)",
      )
      .bind(
        crypto.randomUUID(),
        account.user.id,
        hash,
        new Date(Date.now() + 600_000).toISOString(),
      )
      .run();
    const reset = () =>
      call(`${API}/auth/reset-password`, { body: { token: raw, newPassword: "Ag4inPassword" } });
    expect((await reset()).status).toBe(200);
    expectError(await reset(), 400);
    const resetRow = await onlyAuditRow(account.user.id, "auth.password_reset");
    expect(resetRow).toMatchObject({ actor_type: "user", actor_id: account.user.id });
    expect(JSON.stringify(resetRow)).not.toContain(raw);
    expect(JSON.stringify(resetRow)).not.toContain(hash);
  });
});

describe("GET /audit-events", () => {
  it("shows OWNER and ADMIN their tenant's events only, newest first, with filters", async () => {
    const one = await register();
    const two = await register();
    const key = (account: typeof one, name: string) =>
      call(`${API}/api-keys`, {
        token: account.accessToken,
        tenant: account.tenant.id,
        body: { name },
      });
    const first = await key(one, "first");
    const second = await key(one, "second");
    const foreign = await key(two, "foreign");
    const page = await listAudit(one, "", one.tenant.id);
    expect(page.status, JSON.stringify(page.body)).toBe(200);
    expect(page.body.meta).toMatchObject({ page: 1, limit: 50 });
    const targets = page.body.data.map((event: { targetId: string }) => event.targetId);
    expect(targets).toContain(first.body.id);
    expect(targets).toContain(second.body.id);
    expect(targets).not.toContain(foreign.body.id);
    expect(targets.indexOf(second.body.id)).toBeLessThan(targets.indexOf(first.body.id));
    for (const event of page.body.data) expect(event.tenantId).toBe(one.tenant.id);

    const filtered = await listAudit(
      one,
      `?targetId=${first.body.id}&action=api_key.created`,
      one.tenant.id,
    );
    expect(filtered.body.data).toHaveLength(1);
    expect(filtered.body.data[0]).toMatchObject({
      action: "api_key.created",
      actorType: "user",
      actorId: one.user.id,
      changes: { name: { after: "first" } },
    });
    const byActor = await listAudit(one, `?actorId=${two.user.id}`, one.tenant.id);
    expect(byActor.body.data).toHaveLength(0);
    const future = await listAudit(one, "?from=2999-01-01T00:00:00Z", one.tenant.id);
    expect(future.body.meta.total).toBe(0);
    const past = await listAudit(one, "?to=2000-01-01T00:00:00Z", one.tenant.id);
    expect(past.body.meta.total).toBe(0);

    // The other tenant's owner asking for this tenant: 403; a DEVELOPER: 403; no header: 403.
    expectError(await listAudit(two, "", one.tenant.id), 403);
    const developer = await addMember(one, "DEVELOPER");
    expectError(
      await call(`${API}/audit-events`, { token: developer.accessToken, tenant: one.tenant.id }),
      403,
    );
    expectError(await listAudit(one), 403);
    expectError(await listAudit(one, "?action=nope", one.tenant.id), 400);
    expectError(await listAudit(one, "?from=yesterday", one.tenant.id), 400);
  });

  it("shows platform administrators any tenant's events, or all without the header", async () => {
    const admin = await platformAdmin();
    const owner = await register();
    const created = await call(`${API}/api-keys`, {
      token: owner.accessToken,
      tenant: owner.tenant.id,
      body: { name: "seen by admin" },
    });
    const scoped = await listAudit(admin, `?targetId=${created.body.id}`, owner.tenant.id);
    expect(scoped.status).toBe(200);
    expect(scoped.body.data).toHaveLength(1);
    const all = await listAudit(admin, `?targetId=${created.body.id}`);
    expect(all.body.data).toHaveLength(1);
    expectError(await listAudit(admin, "", crypto.randomUUID()), 404);
  });

  it("keeps the table append-only: UPDATE and DELETE are refused", async () => {
    const owner = await register();
    await addMember(owner, "BILLING");
    const row = await db()
      .prepare("SELECT id FROM audit_events WHERE tenant_id = ? LIMIT 1")
      .bind(owner.tenant.id)
      .first<{ id: string }>();
    expect(row).not.toBeNull();
    await expect(
      db().prepare("UPDATE audit_events SET action = 'x' WHERE id = ?").bind(row?.id).run(),
    ).rejects.toThrow(/append-only/);
    await expect(
      db().prepare("DELETE FROM audit_events WHERE id = ?").bind(row?.id).run(),
    ).rejects.toThrow(/append-only/);
  });
});

void uniqueEmail;
