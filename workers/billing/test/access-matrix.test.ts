import { beforeAll, describe, expect, it } from "vitest";
import {
  type Account,
  addMember,
  type CallOptions,
  call,
  expectError,
  PASSWORD,
  register,
  uniqueEmail,
  uniqueSlug,
} from "./helpers.ts";

type Caller = "anonymous" | "outsider" | "OWNER" | "ADMIN" | "DEVELOPER" | "BILLING";
const CALLERS: Caller[] = ["anonymous", "outsider", "OWNER", "ADMIN", "DEVELOPER", "BILLING"];

interface Fixture {
  owner: Account;
  tokens: Record<Caller, string | undefined>;
  ids: Record<Caller, string | undefined>;
}

/**
 * Every tenant-scoped endpoint, called by each kind of caller. Each case
 * builds a fresh request (and whatever it acts on) per call, so allowed
 * callers succeed on their own object.
 */
interface Case {
  name: string;
  allowed: Caller[];
  success: number;
  build: (f: Fixture, caller: Caller) => Promise<[string, CallOptions]>;
}

let fixture: Fixture;

async function newKey(f: Fixture) {
  const created = await call("/api/v1/api-keys", {
    token: f.owner.accessToken,
    tenant: f.owner.tenant.id,
    body: { name: "matrix" },
  });
  return created.body.id as string;
}

async function newMember(f: Fixture) {
  const created = await call("/api/v1/users", {
    token: f.owner.accessToken,
    tenant: f.owner.tenant.id,
    body: {
      email: uniqueEmail(),
      password: PASSWORD,
      firstName: "M",
      lastName: "X",
      role: "DEVELOPER",
    },
  });
  return created.body.id as string;
}

const tenantPath = (f: Fixture) => `/api/v1/tenants/${f.owner.tenant.id}`;
const EVERYONE: Caller[] = ["OWNER", "ADMIN", "DEVELOPER", "BILLING"];
const MANAGERS: Caller[] = ["OWNER", "ADMIN"];

const CASES: Case[] = [
  {
    name: "GET /tenants/:id",
    allowed: EVERYONE,
    success: 200,
    build: async (f) => [tenantPath(f), {}],
  },
  {
    name: "PATCH /tenants/:id",
    allowed: MANAGERS,
    success: 200,
    build: async (f) => [tenantPath(f), { method: "PATCH", body: { name: "Matrix" } }],
  },
  {
    name: "GET /tenants/:id/members",
    allowed: EVERYONE,
    success: 200,
    build: async (f) => [`${tenantPath(f)}/members`, {}],
  },
  {
    name: "PATCH /tenants/:id/members/:userId",
    allowed: MANAGERS,
    success: 200,
    build: async (f) => [
      `${tenantPath(f)}/members/${await newMember(f)}`,
      { method: "PATCH", body: { role: "BILLING" } },
    ],
  },
  {
    name: "DELETE /tenants/:id/members/:userId",
    allowed: MANAGERS,
    success: 200,
    build: async (f) => [`${tenantPath(f)}/members/${await newMember(f)}`, { method: "DELETE" }],
  },
  {
    name: "POST /users",
    allowed: MANAGERS,
    success: 201,
    build: async () => [
      "/api/v1/users",
      {
        body: {
          email: uniqueEmail(),
          password: PASSWORD,
          firstName: "N",
          lastName: "U",
          role: "DEVELOPER",
        },
      },
    ],
  },
  {
    name: "GET /api-keys",
    allowed: MANAGERS,
    success: 200,
    build: async () => ["/api/v1/api-keys", {}],
  },
  {
    name: "POST /api-keys",
    allowed: MANAGERS,
    success: 201,
    build: async () => ["/api/v1/api-keys", { body: { name: "m" } }],
  },
  {
    name: "DELETE /api-keys/:id",
    allowed: MANAGERS,
    success: 200,
    build: async (f) => [`/api/v1/api-keys/${await newKey(f)}`, { method: "DELETE" }],
  },
];

beforeAll(async () => {
  const owner = await register();
  const members = {
    ADMIN: await addMember(owner, "ADMIN"),
    DEVELOPER: await addMember(owner, "DEVELOPER"),
    BILLING: await addMember(owner, "BILLING"),
  };
  const outsider = await register();
  fixture = {
    owner,
    tokens: {
      anonymous: undefined,
      outsider: outsider.accessToken,
      OWNER: owner.accessToken,
      ADMIN: members.ADMIN.accessToken,
      DEVELOPER: members.DEVELOPER.accessToken,
      BILLING: members.BILLING.accessToken,
    },
    ids: {
      anonymous: undefined,
      outsider: outsider.user.id,
      OWNER: owner.user.id,
      ADMIN: members.ADMIN.id,
      DEVELOPER: members.DEVELOPER.id,
      BILLING: members.BILLING.id,
    },
  };
});

describe("access matrix: every tenant-scoped endpoint × every kind of caller", () => {
  for (const testCase of CASES) {
    it.each(CALLERS)(`${testCase.name} as %s`, async (caller) => {
      const [path, options] = await testCase.build(fixture, caller);
      const token = fixture.tokens[caller];
      const result = await call(path, {
        ...options,
        ...(token ? { token } : {}),
        tenant: fixture.owner.tenant.id,
      });
      if (caller === "anonymous") expectError(result, 401, "Authentication required");
      else if (caller === "outsider")
        expectError(result, 403, "You do not have access to this tenant");
      else if (testCase.allowed.includes(caller))
        expect(result.status, JSON.stringify(result.body)).toBe(testCase.success);
      else expectError(result, 403, "This action requires one of these roles: OWNER, ADMIN");
    });
  }

  // Runs last: it cancels the tenant the other cases use.
  it.each(CALLERS)("DELETE /tenants/:id as %s", async (caller) => {
    if (caller === "OWNER") return; // exercised below, once the other callers are done
    const token = fixture.tokens[caller];
    const result = await call(tenantPath(fixture), {
      method: "DELETE",
      ...(token ? { token } : {}),
      tenant: fixture.owner.tenant.id,
    });
    const expected = caller === "anonymous" ? 401 : 403;
    expectError(result, expected);
    if (caller !== "anonymous" && caller !== "outsider") {
      expect(result.body.message).toBe("This action requires one of these roles: OWNER");
    }
  });

  it("DELETE /tenants/:id as OWNER", async () => {
    const result = await call(tenantPath(fixture), {
      method: "DELETE",
      token: fixture.tokens.OWNER!,
      tenant: fixture.owner.tenant.id,
    });
    expect(result.status).toBe(200);
    expect(result.body.status).toBe("CANCELLED");
  });

  it("tenant-less routes need only a token", async () => {
    for (const [path, options] of [
      ["/api/v1/tenants", {}],
      ["/api/v1/tenants", { body: { name: "Mine", slug: uniqueSlug() } }],
      [`/api/v1/tenants/slug/${fixture.owner.tenant.slug}`, {}],
      ["/api/v1/users/me", {}],
      [`/api/v1/users/${fixture.owner.user.id}`, {}],
      ["/api/v1/auth/me", {}],
    ] as const) {
      expectError(await call(path, options), 401, "Authentication required");
      const ok = await call(path, { ...options, token: fixture.tokens.outsider! });
      expect([200, 201]).toContain(ok.status);
    }
  });
});
