import { createRoute, z } from "@hono/zod-openapi";
import {
  authenticate,
  bearerSecurity,
  createRouter,
  EmailSchema,
  errors,
  GRANTABLE_ROLES,
  json,
  jsonBody,
  MANAGERS,
  newPassword,
  PublicProfileSchema,
  RoleSchema,
  requiredString,
  TENANT_HEADER,
  TenantHeaderSchema,
  tenantWriters,
  UserSchema,
  UuidParam,
  withAccessErrors,
} from "../platform/index.ts";
import type { IdentityRouteServices } from "./route-services.ts";
import { safeUser } from "./views.ts";

const MemberUserSchema = UserSchema.extend({ role: RoleSchema }).openapi("MemberUser");

const getMe = createRoute({
  method: "get",
  path: "/users/me",
  tags: ["users"],
  summary: "The signed-in user",
  security: bearerSecurity,
  middleware: [authenticate()] as const,
  responses: withAccessErrors("signedIn", { 200: json(UserSchema, "The caller") }),
});

const getUser = createRoute({
  method: "get",
  path: "/users/{id}",
  tags: ["users"],
  summary: "A user: the full record if you share a tenant with them, a public profile otherwise",
  security: bearerSecurity,
  middleware: [authenticate()] as const,
  request: { params: z.object({ id: UuidParam("id") }) },
  responses: withAccessErrors("signedIn", {
    200: json(z.union([UserSchema, PublicProfileSchema]), "The user"),
    400: errors[400],
    404: errors[404],
  }),
});

const patchUser = createRoute({
  method: "patch",
  path: "/users/{id}",
  tags: ["users"],
  summary: "Updates names (self, or OWNER/ADMIN of a tenant the user belongs to, with x-tenant-id)",
  description: "`isActive` can only be changed by a platform admin, and never on oneself.",
  security: bearerSecurity,
  middleware: [authenticate()] as const,
  request: {
    params: z.object({ id: UuidParam("id") }),
    headers: z.object({ "x-tenant-id": z.string().optional() }),
    body: jsonBody(
      z
        .object({
          firstName: requiredString("firstName", 100).optional(),
          lastName: requiredString("lastName", 100).optional(),
          isActive: z.boolean().optional(),
        })
        .strict(),
    ),
  },
  responses: withAccessErrors("signedIn", {
    200: json(UserSchema, "Updated"),
    400: errors[400],
    403: errors[403],
    404: errors[404],
  }),
});

const createUser = createRoute({
  method: "post",
  path: "/users",
  tags: ["users"],
  summary: "Adds a member to the tenant, creating the account if the email is new",
  description:
    "OWNER or ADMIN. An existing account is added as it is (the password and names sent are ignored).",
  security: bearerSecurity,
  middleware: tenantWriters(...MANAGERS),
  request: {
    headers: TenantHeaderSchema,
    body: jsonBody(
      z
        .object({
          email: EmailSchema,
          password: newPassword("password"),
          firstName: requiredString("firstName", 100),
          lastName: requiredString("lastName", 100),
          role: z.enum(GRANTABLE_ROLES, {
            message: `role must be one of: ${GRANTABLE_ROLES.join(", ")}`,
          }),
        })
        .strict(),
    ),
  },
  responses: withAccessErrors("tenantMember", {
    201: json(MemberUserSchema, "Member added"),
    400: errors[400],
    409: errors[409],
  }),
});

export const userRoutes = ({ userService }: IdentityRouteServices) =>
  createRouter()
    .openapi(getMe, (c) => c.json(safeUser(c.var.user), 200))
    .openapi(getUser, async (c) => {
      const { id } = c.req.valid("param");
      return c.json(await userService(c).get(c.var.user, id), 200);
    })
    .openapi(patchUser, async (c) => {
      const { id } = c.req.valid("param");
      const changes = c.req.valid("json");
      return c.json(
        await userService(c).update(c.var.user, id, changes, c.req.header(TENANT_HEADER)),
        200,
      );
    })
    .openapi(createUser, async (c) => {
      const body = c.req.valid("json");
      return c.json(await userService(c).addToTenant(c.var.tenantContext, body), 201);
    });
