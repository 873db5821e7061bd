import { auditActorTypes } from "@edge-platform/shared/db/schema/audit";
import { createRoute, z } from "@hono/zod-openapi";
import {
  authenticate,
  bearerSecurity,
  createRouter,
  errors,
  json,
  pageOf,
  positiveInteger,
  withAccessErrors,
} from "../platform/index.ts";
import { auditReader } from "./audit-reader.ts";
import { auditActions } from "./domain/audit.ts";
import type { AuditRouteServices } from "./route-services.ts";

const instant = (field: string) =>
  z.iso
    .datetime({ offset: true, message: `${field} must be an ISO-8601 date-time` })
    .transform((value) => new Date(value).toISOString())
    .openapi({ example: "2026-11-01T00:00:00Z" });

const AuditQuerySchema = z
  .object({
    page: positiveInteger("page").optional().default(1).openapi({ type: "integer", example: 1 }),
    limit: positiveInteger("limit", 100)
      .optional()
      .default(50)
      .openapi({ type: "integer", example: 50 }),
    action: z
      .enum(auditActions, { message: "action must be a known audit action" })
      .optional()
      .openapi({ example: "invoice.voided" }),
    targetId: z.string().min(1).max(255).optional(),
    actorId: z.string().min(1).max(255).optional(),
    from: instant("from").optional(),
    to: instant("to").optional(),
  })
  .strict();

const AuditEventSchema = z
  .object({
    id: z.string(),
    tenantId: z.string().nullable(),
    actorType: z.enum(auditActorTypes),
    actorId: z.string().nullable(),
    action: z.string(),
    targetType: z.string(),
    targetId: z.string(),
    changes: z
      .record(
        z.string(),
        z.object({ before: z.unknown().optional(), after: z.unknown().optional() }),
      )
      .openapi({
        description: "Each changed field, before and after. Never a secret, hash or token.",
      }),
    correlationId: z.string().nullable(),
    createdAt: z.string(),
  })
  .openapi("AuditEvent");

const list = createRoute({
  method: "get",
  path: "/audit-events",
  tags: ["audit"],
  summary:
    "The append-only audit trail, newest first (tenant OWNER/ADMIN with x-tenant-id; platform admins any tenant, or all without the header)",
  description:
    "Every change to money or access is recorded in the same database transaction as the change. Filters: `action`, `targetId`, `actorId`, `from` and `to` (inclusive, ISO-8601).",
  security: bearerSecurity,
  middleware: [authenticate(), auditReader()] as const,
  request: {
    query: AuditQuerySchema,
    headers: z.object({
      "x-tenant-id": z
        .string()
        .optional()
        .openapi({ description: "Required unless the caller is a platform administrator" }),
    }),
  },
  responses: withAccessErrors("tenantMember", {
    200: json(pageOf(AuditEventSchema), "A page"),
    400: errors[400],
    404: errors[404],
  }),
});

export const auditEventRoutes = ({ auditEventService }: AuditRouteServices) =>
  createRouter().openapi(list, async (c) =>
    c.json(await auditEventService(c).list(c.var.auditScope, c.req.valid("query")), 200),
  );
