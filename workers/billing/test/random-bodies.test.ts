import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { createFeature, createPlan, platformAdmin } from "./catalog-helpers.ts";
import { call, register } from "./helpers.ts";

/**
 * Property: whatever body a client sends to the endpoints that parse
 * untrusted input, the answer is never a 5xx and every error is in the
 * billing shape. Seeds are fixed so a failure reproduces; fast-check shrinks
 * it to a minimal body in the assertion message.
 */
const fieldValue = fc.oneof(
  fc.string({ maxLength: 80 }),
  fc.emailAddress(),
  fc.constantFrom("", " ", "Sup3rSecret", "  MiXeD@Example.COM ", "a".repeat(300), "é\u0000\u202e"),
  fc.integer(),
  fc.double(),
  fc.boolean(),
  fc.constant(null),
  fc.array(fc.string({ maxLength: 5 }), { maxLength: 3 }),
  fc.dictionary(fc.string({ maxLength: 5 }), fc.jsonValue({ maxDepth: 2 }), { maxKeys: 3 }),
);

function bodyFor(fields: string[]) {
  const record = fc.record(Object.fromEntries(fields.map((field) => [field, fieldValue])), {
    requiredKeys: [],
  });
  const withUnknownKey = fc.tuple(record, fieldValue).map(([body, extra]) => ({ ...body, extra }));
  return fc.oneof(
    { weight: 6, arbitrary: record },
    { weight: 1, arbitrary: withUnknownKey },
    { weight: 1, arbitrary: fc.jsonValue({ maxDepth: 3 }) },
  );
}

async function expectNever5xx(
  path: string,
  fields: string[],
  seed: number,
  numRuns: number,
  auth: { token?: string; tenant?: string } = {},
) {
  await fc.assert(
    fc.asyncProperty(bodyFor(fields), async (body) => {
      const result = await call(path, { body, ...auth });
      expect(result.status, `${path} -> ${JSON.stringify(result.body)}`).toBeLessThan(500);
      if (result.status >= 400) {
        expect(result.body).toMatchObject({ statusCode: result.status, error: expect.any(String) });
      }
    }),
    { seed, numRuns },
  );
}

describe("random bodies never cause a 5xx", () => {
  it("POST /auth/register", async () => {
    await expectNever5xx(
      "/api/v1/auth/register",
      ["email", "password", "firstName", "lastName", "tenantName", "tenantSlug"],
      1,
      120,
    );
  });

  it("POST /auth/login", async () => {
    await expectNever5xx("/api/v1/auth/login", ["email", "password"], 2, 120);
  });

  it("POST /api-keys", async () => {
    const owner = await register();
    await expectNever5xx("/api/v1/api-keys", ["name", "expiresInDays"], 3, 120, {
      token: owner.accessToken,
      tenant: owner.tenant.id,
    });
  });

  it("POST /coupons", async () => {
    const admin = await platformAdmin();
    await expectNever5xx(
      "/api/v1/coupons",
      [
        "code",
        "percentOff",
        "amountOff",
        "currency",
        "duration",
        "durationInPeriods",
        "maxRedemptions",
        "redeemBy",
      ],
      5,
      120,
      { token: admin.accessToken },
    );
  });

  it("POST /plans/{planId}/entitlements with pricing", async () => {
    const admin = await platformAdmin();
    const plan = await createPlan(admin);
    const metered = await createFeature(admin, "METERED");
    await fc.assert(
      fc.asyncProperty(
        fc.record(
          {
            model: fc.constantFrom("graduated", "volume", "package", "other"),
            tiers: fc.array(
              fc.record(
                {
                  upTo: fc.oneof(fc.constant(null), fc.integer(), fc.double()),
                  unitPrice: fieldValue,
                },
                { requiredKeys: [] },
              ),
              { maxLength: 4 },
            ),
            packageSize: fieldValue,
            packagePrice: fieldValue,
          },
          { requiredKeys: ["model"] },
        ),
        async (pricing) => {
          const result = await call(`/api/v1/plans/${plan.id}/entitlements`, {
            token: admin.accessToken,
            body: { featureId: metered.id, resetPeriod: "MONTHLY", pricing },
          });
          expect(result.status, JSON.stringify(result.body)).toBeLessThan(500);
          if (result.status === 201) {
            await call(`/api/v1/plans/${plan.id}/entitlements/${result.body.id}`, {
              token: admin.accessToken,
              method: "DELETE",
            });
          }
        },
      ),
      { seed: 6, numRuns: 80 },
    );
  });

  it("raw bytes that are not JSON", async () => {
    await fc.assert(
      fc.asyncProperty(fc.string({ maxLength: 40 }), async (raw) => {
        const result = await call("/api/v1/auth/login", { rawBody: raw });
        expect(result.status, raw).toBeLessThan(500);
      }),
      { seed: 4, numRuns: 40 },
    );
  });
});
