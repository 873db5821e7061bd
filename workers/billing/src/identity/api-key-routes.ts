import { apiKeyStatuses } from "@edge-platform/shared/db/schema/identity";
import { createRoute, z } from "@hono/zod-openapi";
import {
  authenticateApiKey,
  bearerSecurity,
  createRouter,
  errors,
  json,
  jsonBody,
  MANAGERS,
  PageQuerySchema,
  pageOf,
  requiredString,
  TenantHeaderSchema,
  tenantMembers,
  tenantWriters,
  UuidParam,
  withAccessErrors,
  withholdOnReplay,
} from "../platform/index.ts";
import type { IdentityRouteServices } from "./route-services.ts";

const ApiKeySchema = z
  .object({
    id: z.string(),
    name: z.string(),
    prefix: z.string(),
    status: z.enum(apiKeyStatuses),
    expiresAt: z.string().nullable(),
    lastUsedAt: z.string().nullable(),
    revokedAt: z.string().nullable(),
    createdByUserId: z.string(),
    createdAt: z.string(),
  })
  .openapi("ApiKey");

const CreatedApiKeySchema = z
  .object({
    id: z.string(),
    name: z.string(),
    key: z.string().optional().openapi({
      description:
        "The raw key. Shown once; store it now. Absent from a replay of the same Idempotency-Key (see `notice`).",
    }),
    prefix: z.string(),
    status: z.enum(apiKeyStatuses),
    expiresAt: z.string().nullable(),
    createdAt: z.string(),
    notice: z.string().optional().openapi({
      description: "Only on an Idempotency-Key replay: says that the raw key is not repeated.",
    }),
  })
  .openapi("CreatedApiKey");

/** The raw key is never stored, so a replayed creation answers without it. */
const RAW_KEY_NOT_REPLAYED = {
  fields: ["key"],
  notice:
    "Replayed response: the raw API key is shown only in the first response and is not stored; create a new key if it was lost.",
};

const readers = tenantMembers(...MANAGERS);
const writers = tenantWriters(...MANAGERS);

const createKey = createRoute({
  method: "post",
  path: "/api-keys",
  tags: ["api-keys"],
  summary: "Creates an API key for the tenant (OWNER, ADMIN); the key is in this response only",
  security: bearerSecurity,
  middleware: writers,
  request: {
    headers: TenantHeaderSchema,
    body: jsonBody(
      z
        .object({
          name: requiredString("name", 255),
          expiresInDays: z
            .number({ message: "expiresInDays must be an integer from 1 to 365" })
            .int("expiresInDays must be an integer from 1 to 365")
            .min(1, "expiresInDays must be an integer from 1 to 365")
            .max(365, "expiresInDays must be an integer from 1 to 365")
            .optional(),
        })
        .strict(),
    ),
  },
  responses: withAccessErrors("tenantMember", {
    201: json(CreatedApiKeySchema, "Created"),
    400: errors[400],
  }),
});

const listKeys = createRoute({
  method: "get",
  path: "/api-keys",
  tags: ["api-keys"],
  summary: "The tenant's keys, newest first (never the key or its hash)",
  security: bearerSecurity,
  middleware: readers,
  request: { headers: TenantHeaderSchema, query: PageQuerySchema },
  responses: withAccessErrors("tenantMember", {
    200: json(pageOf(ApiKeySchema), "A page"),
    400: errors[400],
  }),
});

const currentKey = createRoute({
  method: "get",
  path: "/api-keys/current",
  tags: ["api-keys"],
  summary: "Server-to-server: describes the API key presented as `Authorization: Bearer <key>`",
  security: [{ apiKey: [] }],
  middleware: [authenticateApiKey()] as const,
  responses: withAccessErrors("apiKey", {
    200: json(ApiKeySchema.extend({ tenantId: z.string() }), "The key"),
  }),
});

const revokeKey = createRoute({
  method: "delete",
  path: "/api-keys/{id}",
  tags: ["api-keys"],
  summary: "Revokes a key for good (OWNER, ADMIN); revoking again is a 409",
  security: bearerSecurity,
  middleware: writers,
  request: { headers: TenantHeaderSchema, params: z.object({ id: UuidParam("id") }) },
  responses: withAccessErrors("tenantMember", {
    200: json(ApiKeySchema, "Revoked"),
    400: errors[400],
    404: errors[404],
    409: errors[409],
  }),
});

export const apiKeyRoutes = ({ apiKeyService }: IdentityRouteServices) =>
  createRouter()
    .openapi(createKey, async (c) => {
      withholdOnReplay(c, RAW_KEY_NOT_REPLAYED);
      return c.json(
        await apiKeyService(c).create(c.var.tenantContext, c.var.user, c.req.valid("json")),
        201,
      );
    })
    .openapi(listKeys, async (c) =>
      c.json(await apiKeyService(c).list(c.var.tenantContext, c.req.valid("query")), 200),
    )
    .openapi(currentKey, (c) => c.json(apiKeyService(c).describe(c.var.apiKey), 200))
    .openapi(revokeKey, async (c) =>
      c.json(await apiKeyService(c).revoke(c.var.tenantContext, c.req.valid("param").id), 200),
    );
