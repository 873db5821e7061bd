import { database } from "@edge-platform/shared/db/client";
import { createRoute, z } from "@hono/zod-openapi";
import {
  authenticate,
  bearerSecurity,
  createRouter,
  errors,
  json,
  PageQuerySchema,
  pageMeta,
  pageOf,
  pageOffset,
  requirePlatformAdmin,
  TenantSchema,
  withAccessErrors,
} from "../platform/index.ts";
import { listAllTenants } from "./tenant-storage.ts";
import { tenantView } from "./views.ts";

const AdminTenantsQuery = PageQuerySchema.extend({
  search: z
    .string()
    .min(1, "search must not be empty")
    .max(100, "search must be at most 100 characters")
    .optional(),
}).strict();

const list = createRoute({
  method: "get",
  path: "/admin/tenants",
  tags: ["admin"],
  summary:
    "Every tenant, newest first; `search` matches part of the name or slug (platform admins)",
  security: bearerSecurity,
  middleware: [authenticate(), requirePlatformAdmin()] as const,
  request: { query: AdminTenantsQuery },
  responses: withAccessErrors("platformAdmin", {
    200: json(pageOf(TenantSchema), "A page"),
    400: errors[400],
  }),
});

export const adminTenantRoutes = createRouter().openapi(list, async (c) => {
  const { page, limit, search } = c.req.valid("query");
  const { rows, total } = await listAllTenants(
    database(c.env.DB),
    search,
    pageOffset({ page, limit }),
    limit,
  );
  return c.json({ data: rows.map(tenantView), meta: pageMeta({ page, limit }, total) }, 200);
});
