import { webhookDeliveryStatuses } from "@edge-platform/shared/db/schema/webhooks";
import { createRoute, z } from "@hono/zod-openapi";
import {
  authenticate,
  bearerSecurity,
  billingContext,
  createRouter,
  ErrorSchema,
  errors,
  json,
  jsonBody,
  PageQuerySchema,
  pageOf,
  requireMoneyReader,
  requireWebhookManager,
  TenantHeaderSchema,
  UuidParam,
  withAccessErrors,
  withholdOnReplay,
} from "../platform/index.ts";
import { TENANT_EVENT_TYPES } from "./domain/tenant-events.ts";
import { ALL_EVENT_TYPES } from "./domain/webhook-delivery.ts";
import {
  DEFAULT_ROTATION_OVERLAP_HOURS,
  MAX_ROTATION_OVERLAP_HOURS,
} from "./domain/webhook-secret.ts";
import { WEBHOOK_URL_MAX_LENGTH } from "./domain/webhook-url.ts";
import type { NotificationRouteServices } from "./route-services.ts";

const readers = [authenticate(), billingContext(), requireMoneyReader()];
const writers = [authenticate(), billingContext(), requireWebhookManager()];

const EVENT_TYPE_VALUES = [...TENANT_EVENT_TYPES, ALL_EVENT_TYPES] as const;
const EVENT_TYPES_MESSAGE = `eventTypes must be a non-empty list of: ${EVENT_TYPE_VALUES.join(", ")}`;

const UrlField = z
  .string({ message: "url must be a string" })
  .trim()
  .min(1, "url should not be empty")
  .max(WEBHOOK_URL_MAX_LENGTH, `url must be at most ${WEBHOOK_URL_MAX_LENGTH} characters`)
  .openapi({
    description:
      "Public HTTPS URL: no IP literal in private, loopback, link-local, CGNAT, unspecified, multicast or reserved ranges; no localhost, *.localhost, *.local, *.internal",
    example: "https://hooks.example.com/billing",
  });

const EventTypesField = z
  .array(z.enum(EVENT_TYPE_VALUES, { message: EVENT_TYPES_MESSAGE }))
  .min(1, EVENT_TYPES_MESSAGE)
  .max(EVENT_TYPE_VALUES.length * 2, EVENT_TYPES_MESSAGE)
  .openapi({
    description: `The event types to receive; \`["*"]\` for every type (also types added later)`,
    example: ["invoice.finalized", "invoice.paid"],
  });

const DescriptionField = z
  .string({ message: "description must be a string" })
  .trim()
  .max(500, "description must be at most 500 characters")
  .nullable();

const EnabledField = z.boolean({ message: "enabled must be a boolean" });

const CreateBody = z
  .object({
    url: UrlField,
    eventTypes: EventTypesField,
    description: DescriptionField.optional(),
    enabled: EnabledField.optional(),
  })
  .strict();

const PatchBody = z
  .object({
    url: UrlField.optional(),
    eventTypes: EventTypesField.optional(),
    description: DescriptionField.optional(),
    enabled: EnabledField.optional().openapi({
      description: "`true` re-enables a disabled endpoint and clears its failure streak",
    }),
  })
  .strict()
  .refine((body) => Object.values(body).some((value) => value !== undefined), {
    message: "body must change at least one of url, eventTypes, description, enabled",
  });

const WebhookEndpointSchema = z
  .object({
    id: z.string(),
    tenantId: z.string(),
    url: z.string(),
    description: z.string().nullable(),
    eventTypes: z.array(z.string()),
    enabled: z.boolean(),
    failingSince: z.string().nullable().openapi({
      description: "First failed delivery since the last success; null while healthy",
    }),
    disabledReason: z.string().nullable(),
    disabledAt: z.string().nullable(),
    previousSecretExpiresAt: z.string().nullable().openapi({
      description:
        "While a rotated-out secret still signs (a second `v1,` signature in `webhook-signature`), when it stops; null otherwise",
    }),
    createdAt: z.string(),
    updatedAt: z.string(),
  })
  .openapi("WebhookEndpoint");

const WithSecretSchema = WebhookEndpointSchema.extend({
  secret: z.string().optional().openapi({
    description:
      "The signing secret (`whsec_…`). Shown in this response only; absent from an Idempotency-Key replay (see `notice`).",
  }),
  notice: z.string().optional(),
}).openapi("WebhookEndpointWithSecret");

const WebhookAttemptSchema = z
  .object({
    attemptNumber: z.number().int(),
    statusCode: z.number().int().nullable(),
    error: z.string().nullable(),
    durationMs: z.number().int(),
    manual: z.boolean(),
    attemptedAt: z.string(),
  })
  .openapi("WebhookDeliveryAttempt");

const WebhookDeliverySchema = z
  .object({
    id: z.string(),
    endpointId: z.string(),
    eventId: z.string(),
    eventType: z.string(),
    status: z.enum(webhookDeliveryStatuses),
    attemptCount: z.number().int(),
    lastStatusCode: z.number().int().nullable(),
    lastError: z.string().nullable(),
    deliveredAt: z.string().nullable(),
    createdAt: z.string(),
    updatedAt: z.string(),
    attempts: z.array(WebhookAttemptSchema).openapi({ description: "Newest first" }),
  })
  .openapi("WebhookDelivery");

const SECRET_NOT_REPLAYED = {
  fields: ["secret"],
  notice:
    "Replayed response: the signing secret is shown only in the first response; rotate it (POST /webhook-endpoints/:id/rotate-secret) if it was lost.",
};

const IdParams = z.object({ id: UuidParam("id") });
const tags = ["webhook-endpoints"];

const create = createRoute({
  method: "post",
  path: "/webhook-endpoints",
  tags,
  summary:
    "Registers a webhook endpoint (OWNER, ADMIN, platform administrators); the signing secret is in this response only",
  security: bearerSecurity,
  middleware: writers,
  request: { headers: TenantHeaderSchema, body: jsonBody(CreateBody) },
  responses: withAccessErrors("tenantMember", {
    201: json(WithSecretSchema, "Created"),
    400: errors[400],
    409: errors[409],
    503: json(ErrorSchema, "Webhook signing is not configured (WEBHOOK_SECRET_KEY)"),
  }),
});

const list = createRoute({
  method: "get",
  path: "/webhook-endpoints",
  tags,
  summary: "The tenant's webhook endpoints, newest first (OWNER, ADMIN, BILLING); never the secret",
  security: bearerSecurity,
  middleware: readers,
  request: { headers: TenantHeaderSchema, query: PageQuerySchema },
  responses: withAccessErrors("tenantMember", {
    200: json(pageOf(WebhookEndpointSchema), "A page"),
    400: errors[400],
  }),
});

const getOne = createRoute({
  method: "get",
  path: "/webhook-endpoints/{id}",
  tags,
  summary: "One endpoint, with why it was disabled if it was (OWNER, ADMIN, BILLING)",
  security: bearerSecurity,
  middleware: readers,
  request: { headers: TenantHeaderSchema, params: IdParams },
  responses: withAccessErrors("tenantMember", {
    200: json(WebhookEndpointSchema, "The endpoint"),
    400: errors[400],
    404: errors[404],
  }),
});

const patch = createRoute({
  method: "patch",
  path: "/webhook-endpoints/{id}",
  tags,
  summary: "Changes an endpoint; `enabled: true` re-enables a disabled one (OWNER, ADMIN)",
  security: bearerSecurity,
  middleware: writers,
  request: { headers: TenantHeaderSchema, params: IdParams, body: jsonBody(PatchBody) },
  responses: withAccessErrors("tenantMember", {
    200: json(WebhookEndpointSchema, "Changed"),
    400: errors[400],
    404: errors[404],
  }),
});

const remove = createRoute({
  method: "delete",
  path: "/webhook-endpoints/{id}",
  tags,
  summary: "Deletes an endpoint; deliveries still queued for it are skipped (OWNER, ADMIN)",
  security: bearerSecurity,
  middleware: writers,
  request: { headers: TenantHeaderSchema, params: IdParams },
  responses: withAccessErrors("tenantMember", {
    204: { description: "Deleted" },
    400: errors[400],
    404: errors[404],
  }),
});

const RotateBody = z
  .object({
    previousSecretExpiresInHours: z
      .number({ message: "previousSecretExpiresInHours must be a number" })
      .int("previousSecretExpiresInHours must be a whole number of hours")
      .min(0, "previousSecretExpiresInHours must be at least 0")
      .max(
        MAX_ROTATION_OVERLAP_HOURS,
        `previousSecretExpiresInHours must be at most ${MAX_ROTATION_OVERLAP_HOURS}`,
      )
      .optional()
      .openapi({
        description: `How long the replaced secret keeps signing beside the new one (hours, 0-${MAX_ROTATION_OVERLAP_HOURS}); ${DEFAULT_ROTATION_OVERLAP_HOURS} unless said; 0 stops it at once`,
        example: DEFAULT_ROTATION_OVERLAP_HOURS,
      }),
  })
  .strict()
  .openapi("RotateWebhookSecretRequest");

const rotate = createRoute({
  method: "post",
  path: "/webhook-endpoints/{id}/rotate-secret",
  tags,
  summary:
    "Replaces the signing secret; the new one is in this response only and signs from now on, the old one beside it for 24 hours unless the body says otherwise (OWNER, ADMIN)",
  security: bearerSecurity,
  middleware: writers,
  request: {
    headers: TenantHeaderSchema,
    params: IdParams,
    body: { ...jsonBody(RotateBody), required: false },
  },
  responses: withAccessErrors("tenantMember", {
    200: json(WithSecretSchema, "Rotated"),
    400: errors[400],
    404: errors[404],
    503: json(ErrorSchema, "Webhook signing is not configured (WEBHOOK_SECRET_KEY)"),
  }),
});

const deliveries = createRoute({
  method: "get",
  path: "/webhook-endpoints/{id}/deliveries",
  tags,
  summary:
    "The endpoint's delivery log, newest first: each delivery with every attempt (status code or error, time, duration) (OWNER, ADMIN, BILLING)",
  security: bearerSecurity,
  middleware: readers,
  request: { headers: TenantHeaderSchema, params: IdParams, query: PageQuerySchema },
  responses: withAccessErrors("tenantMember", {
    200: json(pageOf(WebhookDeliverySchema), "A page"),
    400: errors[400],
    404: errors[404],
  }),
});

const resend = createRoute({
  method: "post",
  path: "/webhook-endpoints/{id}/deliveries/{deliveryId}/resend",
  tags,
  summary:
    "Sends a finished delivery again (same body and event id) through the delivery queue (OWNER, ADMIN)",
  security: bearerSecurity,
  middleware: writers,
  request: {
    headers: TenantHeaderSchema,
    params: z.object({ id: UuidParam("id"), deliveryId: UuidParam("deliveryId") }),
  },
  responses: withAccessErrors("tenantMember", {
    202: json(WebhookDeliverySchema, "Queued"),
    400: errors[400],
    404: errors[404],
    409: errors[409],
  }),
});

const sendExample = createRoute({
  method: "post",
  path: "/webhook-endpoints/{id}/send-example",
  tags,
  summary:
    "Sends a `webhook.test` event to this endpoint only, signed, retried and logged like any delivery: check a receiver before real events come (OWNER, ADMIN)",
  security: bearerSecurity,
  middleware: writers,
  request: { headers: TenantHeaderSchema, params: IdParams },
  responses: withAccessErrors("tenantMember", {
    202: json(WebhookDeliverySchema, "Queued"),
    400: errors[400],
    404: errors[404],
    409: errors[409],
    503: json(ErrorSchema, "The delivery queue is unavailable"),
  }),
});

export const webhookEndpointRoutes = ({ webhookEndpointService }: NotificationRouteServices) =>
  createRouter()
    .openapi(create, async (c) => {
      withholdOnReplay(c, SECRET_NOT_REPLAYED);
      return c.json(
        await webhookEndpointService(c).create(c.var.billingContext, c.req.valid("json")),
        201,
      );
    })
    .openapi(list, async (c) =>
      c.json(await webhookEndpointService(c).list(c.var.billingContext, c.req.valid("query")), 200),
    )
    .openapi(getOne, async (c) =>
      c.json(
        await webhookEndpointService(c).get(c.var.billingContext, c.req.valid("param").id),
        200,
      ),
    )
    .openapi(patch, async (c) =>
      c.json(
        await webhookEndpointService(c).update(
          c.var.billingContext,
          c.req.valid("param").id,
          c.req.valid("json"),
        ),
        200,
      ),
    )
    .openapi(remove, async (c) => {
      await webhookEndpointService(c).remove(c.var.billingContext, c.req.valid("param").id);
      return c.body(null, 204);
    })
    .openapi(rotate, async (c) => {
      withholdOnReplay(c, SECRET_NOT_REPLAYED);
      return c.json(
        await webhookEndpointService(c).rotateSecret(
          c.var.billingContext,
          c.req.valid("param").id,
          (c.req.valid("json") as z.infer<typeof RotateBody> | undefined) ?? {},
        ),
        200,
      );
    })
    .openapi(sendExample, async (c) =>
      c.json(
        await webhookEndpointService(c).sendExample(c.var.billingContext, c.req.valid("param").id),
        202,
      ),
    )
    .openapi(deliveries, async (c) =>
      c.json(
        await webhookEndpointService(c).deliveryLog(
          c.var.billingContext,
          c.req.valid("param").id,
          c.req.valid("query"),
        ),
        200,
      ),
    )
    .openapi(resend, async (c) => {
      const { id, deliveryId } = c.req.valid("param");
      return c.json(
        await webhookEndpointService(c).resend(c.var.billingContext, id, deliveryId),
        202,
      );
    });
