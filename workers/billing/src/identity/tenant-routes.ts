import { createRoute, z } from "@hono/zod-openapi";
import {
  authenticate,
  bearerSecurity,
  createRouter,
  EVERY_ROLE,
  errors,
  json,
  jsonBody,
  MANAGERS,
  MetadataSchema,
  PageQuerySchema,
  pageOf,
  RoleSchema,
  requiredString,
  requireWritableTenant,
  SlugSchema,
  TenantHeaderSchema,
  TenantSchema,
  TenantWithRoleSchema,
  tenantContext,
  tenantMembers,
  tenantWriters,
  UuidParam,
  withAccessErrors,
} from "../platform/index.ts";
import type { IdentityRouteServices } from "./route-services.ts";

const IdParams = z.object({ id: UuidParam("id") });
const MemberParams = z.object({ id: UuidParam("id"), userId: UuidParam("userId") });

const MemberSchema = z
  .object({
    userId: z.string(),
    email: z.string(),
    firstName: z.string(),
    lastName: z.string(),
    role: RoleSchema,
    joinedAt: z.string(),
  })
  .openapi("Member");
const MembershipSchema = z
  .object({ userId: z.string(), tenantId: z.string(), role: RoleSchema })
  .openapi("Membership");

const member = tenantMembers(...EVERY_ROLE);
const manager = tenantWriters(...MANAGERS);

const createTenant = createRoute({
  method: "post",
  path: "/tenants",
  tags: ["tenants"],
  summary: "Creates a tenant; the caller becomes its OWNER",
  security: bearerSecurity,
  middleware: [authenticate()] as const,
  request: {
    body: jsonBody(
      z
        .object({
          name: requiredString("name", 255),
          slug: SlugSchema("slug").optional(),
          metadata: MetadataSchema.optional(),
        })
        .strict(),
    ),
  },
  responses: withAccessErrors("signedIn", {
    201: json(TenantWithRoleSchema, "Created"),
    400: errors[400],
    409: errors[409],
  }),
});

const listTenants = createRoute({
  method: "get",
  path: "/tenants",
  tags: ["tenants"],
  summary: "The caller's tenants, newest membership first",
  security: bearerSecurity,
  middleware: [authenticate()] as const,
  request: { query: PageQuerySchema },
  responses: withAccessErrors("signedIn", {
    200: json(pageOf(TenantWithRoleSchema), "A page"),
    400: errors[400],
  }),
});

const getBySlug = createRoute({
  method: "get",
  path: "/tenants/slug/{slug}",
  tags: ["tenants"],
  summary: "Looks a slug up: the tenant for members, only id, name and slug for anyone else",
  security: bearerSecurity,
  middleware: [authenticate()] as const,
  request: {
    params: z.object({
      slug: z
        .string()
        .max(100)
        .openapi({ param: { name: "slug", in: "path" } }),
    }),
  },
  responses: withAccessErrors("signedIn", {
    200: json(
      z.union([
        TenantWithRoleSchema,
        z.object({ id: z.string(), name: z.string(), slug: z.string() }),
      ]),
      "Found",
    ),
    404: errors[404],
  }),
});

const getTenant = createRoute({
  method: "get",
  path: "/tenants/{id}",
  tags: ["tenants"],
  summary: "The tenant named by x-tenant-id (which must equal :id), with the caller's role",
  security: bearerSecurity,
  middleware: member,
  request: { params: IdParams, headers: TenantHeaderSchema },
  responses: withAccessErrors("tenantMember", {
    200: json(TenantWithRoleSchema, "The tenant"),
    400: errors[400],
  }),
});

const patchTenant = createRoute({
  method: "patch",
  path: "/tenants/{id}",
  tags: ["tenants"],
  summary: "Renames the tenant or replaces its metadata (OWNER, ADMIN)",
  security: bearerSecurity,
  middleware: manager,
  request: {
    params: IdParams,
    headers: TenantHeaderSchema,
    body: jsonBody(
      z
        .object({
          name: requiredString("name", 255).optional(),
          metadata: MetadataSchema.optional(),
        })
        .strict(),
    ),
  },
  responses: withAccessErrors("tenantMember", {
    200: json(TenantSchema, "Updated"),
    400: errors[400],
  }),
});

const deleteTenant = createRoute({
  method: "delete",
  path: "/tenants/{id}",
  tags: ["tenants"],
  summary: "Cancels the tenant (OWNER): status CANCELLED, every API key revoked",
  security: bearerSecurity,
  middleware: tenantWriters("OWNER"),
  request: { params: IdParams, headers: TenantHeaderSchema },
  responses: withAccessErrors("tenantMember", {
    200: json(TenantSchema, "Cancelled"),
    400: errors[400],
  }),
});

const listMembers = createRoute({
  method: "get",
  path: "/tenants/{id}/members",
  tags: ["tenants"],
  summary: "The tenant's members and their roles (any member)",
  security: bearerSecurity,
  middleware: member,
  request: { params: IdParams, headers: TenantHeaderSchema },
  responses: withAccessErrors("tenantMember", {
    200: json(z.object({ data: z.array(MemberSchema) }), "Members"),
    400: errors[400],
  }),
});

const changeRole = createRoute({
  method: "patch",
  path: "/tenants/{id}/members/{userId}",
  tags: ["tenants"],
  summary: "Changes a member's role (OWNER, ADMIN; only an OWNER touches ownership)",
  description: "The last OWNER cannot be demoted (409).",
  security: bearerSecurity,
  middleware: manager,
  request: {
    params: MemberParams,
    headers: TenantHeaderSchema,
    body: jsonBody(z.object({ role: RoleSchema }).strict()),
  },
  responses: withAccessErrors("tenantMember", {
    200: json(MembershipSchema, "Changed"),
    400: errors[400],
    404: errors[404],
    409: errors[409],
  }),
});

const removeMember = createRoute({
  method: "delete",
  path: "/tenants/{id}/members/{userId}",
  tags: ["tenants"],
  summary: "Removes a member (OWNER, ADMIN) or leaves the tenant (oneself)",
  description: "The last OWNER cannot be removed (409).",
  security: bearerSecurity,
  middleware: [authenticate(), tenantContext(), requireWritableTenant()] as const,
  request: { params: MemberParams, headers: TenantHeaderSchema },
  responses: withAccessErrors("tenantMember", {
    200: json(MembershipSchema, "Removed"),
    400: errors[400],
    404: errors[404],
    409: errors[409],
  }),
});

export const tenantRoutes = ({ tenantService }: IdentityRouteServices) =>
  createRouter()
    .openapi(createTenant, async (c) =>
      c.json(await tenantService(c).create(c.var.user, c.req.valid("json")), 201),
    )
    .openapi(listTenants, async (c) =>
      c.json(await tenantService(c).list(c.var.user, c.req.valid("query")), 200),
    )
    .openapi(getBySlug, async (c) =>
      c.json(await tenantService(c).getBySlug(c.var.user, c.req.valid("param").slug), 200),
    )
    .openapi(getTenant, (c) =>
      c.json(tenantService(c).get(c.var.tenantContext, c.req.valid("param").id), 200),
    )
    .openapi(patchTenant, async (c) =>
      c.json(
        await tenantService(c).update(
          c.var.tenantContext,
          c.req.valid("param").id,
          c.req.valid("json"),
        ),
        200,
      ),
    )
    .openapi(deleteTenant, async (c) =>
      c.json(await tenantService(c).cancel(c.var.tenantContext, c.req.valid("param").id), 200),
    )
    .openapi(listMembers, async (c) =>
      c.json(await tenantService(c).members(c.var.tenantContext, c.req.valid("param").id), 200),
    )
    .openapi(changeRole, async (c) => {
      const { id, userId } = c.req.valid("param");
      return c.json(
        await tenantService(c).changeRole(
          c.var.tenantContext,
          id,
          userId,
          c.req.valid("json").role,
        ),
        200,
      );
    })
    .openapi(removeMember, async (c) => {
      const { id, userId } = c.req.valid("param");
      return c.json(
        await tenantService(c).removeMember(c.var.tenantContext, c.var.user, id, userId),
        200,
      );
    });
