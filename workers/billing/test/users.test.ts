import { describe, expect, it } from "vitest";
import {
  addMember,
  call,
  db,
  expectError,
  login,
  PASSWORD,
  register,
  uniqueEmail,
} from "./helpers.ts";

const U = "/api/v1/users";

describe("GET /users/me and /users/:id", () => {
  it("me: the full record, never the password hash", async () => {
    const account = await register();
    const me = await call(`${U}/me`, { token: account.accessToken });
    expect(me.status).toBe(200);
    expect(Object.keys(me.body).sort()).toEqual([
      "createdAt",
      "email",
      "firstName",
      "id",
      "isActive",
      "isPlatformAdmin",
      "lastName",
      "updatedAt",
    ]);
    expectError(await call(`${U}/me`), 401);
  });

  it("another user's email only when a tenant is shared", async () => {
    const owner = await register();
    const member = await addMember(owner, "DEVELOPER");
    const stranger = await register();
    const shared = await call(`${U}/${member.id}`, { token: owner.accessToken });
    expect(shared.body).toMatchObject({ id: member.id, email: member.email });
    const hidden = await call(`${U}/${member.id}`, { token: stranger.accessToken });
    expect(hidden.status).toBe(200);
    expect(hidden.body).toEqual({ id: member.id, firstName: "Member", lastName: "DEVELOPER" });
    expectError(
      await call(`${U}/00000000-0000-4000-8000-000000000000`, { token: owner.accessToken }),
      404,
    );
    expectError(await call(`${U}/123`, { token: owner.accessToken }), 400);
  });
});

describe("PATCH /users/:id", () => {
  it("self-service names; not one's own active flag", async () => {
    const account = await register();
    const patched = await call(`${U}/${account.user.id}`, {
      method: "PATCH",
      token: account.accessToken,
      body: { firstName: "New" },
    });
    expect(patched.status).toBe(200);
    expect(patched.body.firstName).toBe("New");
    expectError(
      await call(`${U}/${account.user.id}`, {
        method: "PATCH",
        token: account.accessToken,
        body: { isActive: false },
      }),
      403,
      "Cannot change your own active status",
    );
    expectError(
      await call(`${U}/${account.user.id}`, {
        method: "PATCH",
        token: account.accessToken,
        body: { email: "x@y.co" },
      }),
      400,
      (message) => expect(message).toEqual(["property email should not exist"]),
    );
  });

  it("others: OWNER/ADMIN of a shared ACTIVE tenant with x-tenant-id; never across tenants", async () => {
    const owner = await register();
    const admin = await addMember(owner, "ADMIN");
    const dev = await addMember(owner, "DEVELOPER");
    const outsider = await register();
    const patch = (
      token: string,
      id: string,
      tenant?: string,
      body: object = { lastName: "Changed" },
    ) => call(`${U}/${id}`, { method: "PATCH", token, ...(tenant ? { tenant } : {}), body });
    expect((await patch(admin.accessToken, dev.id, owner.tenant.id)).status).toBe(200);
    expectError(
      await patch(admin.accessToken, dev.id),
      400,
      "x-tenant-id header is required to update another user",
    );
    expectError(
      await patch(admin.accessToken, dev.id, "nope"),
      400,
      "x-tenant-id must be a valid UUID",
    );
    expectError(await patch(dev.accessToken, admin.id, owner.tenant.id), 403);
    expectError(
      await patch(admin.accessToken, owner.user.id, owner.tenant.id),
      403,
      "Only an OWNER can update an OWNER",
    );
    // The outsider names their own tenant: the target is not in it.
    expectError(await patch(outsider.accessToken, dev.id, outsider.tenant.id), 404);
    // ... or ours, of which they are not a member.
    expectError(
      await patch(outsider.accessToken, dev.id, owner.tenant.id),
      403,
      "You do not have access to this tenant",
    );
    expectError(
      await patch(owner.accessToken, dev.id, owner.tenant.id, { isActive: false }),
      403,
      "Only a platform admin can change a user's active status",
    );
  });

  it("a platform admin can deactivate a user, whose tokens then stop working", async () => {
    const admin = await register();
    await db()
      .prepare("UPDATE users SET is_platform_admin = 1 WHERE id = ?")
      .bind(admin.user.id)
      .run();
    const target = await register();
    const result = await call(`${U}/${target.user.id}`, {
      method: "PATCH",
      token: admin.accessToken,
      body: { isActive: false },
    });
    expect(result.status).toBe(200);
    expect(result.body.isActive).toBe(false);
    expectError(await call(`${U}/me`, { token: target.accessToken }), 401);
  });
});

describe("POST /users", () => {
  it("creates an account with the given role, or adds an existing one; 409 when already a member", async () => {
    const owner = await register();
    const email = uniqueEmail();
    const created = await call(U, {
      token: owner.accessToken,
      tenant: owner.tenant.id,
      body: {
        email: email.toUpperCase(),
        password: PASSWORD,
        firstName: "B",
        lastName: "C",
        role: "BILLING",
      },
    });
    expect(created.status).toBe(201);
    expect(created.body).toMatchObject({ email, role: "BILLING", isActive: true });
    await login(email);

    const existing = await register();
    const added = await call(U, {
      token: owner.accessToken,
      tenant: owner.tenant.id,
      body: {
        email: existing.email,
        password: "Ign0redPass",
        firstName: "X",
        lastName: "Y",
        role: "ADMIN",
      },
    });
    expect(added.status).toBe(201);
    expect(added.body).toMatchObject({ id: existing.user.id, firstName: "Ada", role: "ADMIN" });
    await login(existing.email); // password unchanged

    expectError(
      await call(U, {
        token: owner.accessToken,
        tenant: owner.tenant.id,
        body: {
          email: existing.email,
          password: PASSWORD,
          firstName: "X",
          lastName: "Y",
          role: "DEVELOPER",
        },
      }),
      409,
      `User "${existing.email}" is already a member of this tenant`,
    );
    expectError(
      await call(U, {
        token: owner.accessToken,
        tenant: owner.tenant.id,
        body: {
          email: uniqueEmail(),
          password: PASSWORD,
          firstName: "X",
          lastName: "Y",
          role: "OWNER",
        },
      }),
      400,
      (message) => expect(message).toEqual(["role must be one of: ADMIN, DEVELOPER, BILLING"]),
    );
  });
});
