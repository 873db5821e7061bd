import { createRoute, z } from "@hono/zod-openapi";
import { CancelBody, SubscribeBody, SubscriptionSchema } from "../catalog/index.ts";
import {
  bearerSecurity,
  createRouter,
  D1_BOOKMARK_HEADER,
  EVERY_ROLE,
  errors,
  json,
  jsonBody,
  MANAGERS,
  PageQuerySchema,
  pageOf,
  replicaReads,
  TenantHeaderSchema,
  tenantMembers,
  tenantWriters,
  UuidParam,
  withAccessErrors,
} from "../platform/index.ts";
import type { SubscriptionRouteServices } from "./route-services.ts";

const member = tenantMembers(...EVERY_ROLE);
/** Display reads: a member, through a D1 session that a read replica may serve. */
const memberReads = [...member, replicaReads()];
const bookmarkHeaders = z.object({
  [D1_BOOKMARK_HEADER]: z.string().optional().openapi({
    description:
      "A bookmark from an earlier response: the read then sees data at least that recent. Each response carries its own.",
  }),
});
const manager = tenantWriters(...MANAGERS);
const IdParams = z.object({ id: UuidParam("id") });

const subscribe = createRoute({
  method: "post",
  path: "/subscriptions",
  tags: ["subscriptions"],
  summary:
    "Subscribes the tenant (OWNER, ADMIN); with a current subscription this is a plan change",
  security: bearerSecurity,
  middleware: manager,
  request: { headers: TenantHeaderSchema, body: jsonBody(SubscribeBody) },
  responses: withAccessErrors("tenantMember", {
    201: json(SubscriptionSchema, "Subscribed"),
    400: errors[400],
    404: errors[404],
    409: errors[409],
  }),
});

const listSubscriptions = createRoute({
  method: "get",
  path: "/subscriptions",
  tags: ["subscriptions"],
  summary: "The tenant's subscriptions, newest first (any member)",
  security: bearerSecurity,
  middleware: memberReads,
  request: { headers: TenantHeaderSchema.merge(bookmarkHeaders), query: PageQuerySchema },
  responses: withAccessErrors("tenantMember", {
    200: json(pageOf(SubscriptionSchema), "A page"),
    400: errors[400],
  }),
});

const currentSubscription = createRoute({
  method: "get",
  path: "/subscriptions/active",
  tags: ["subscriptions"],
  summary: "The tenant's current subscription (ACTIVE, TRIALING, PAST_DUE or PAUSED)",
  security: bearerSecurity,
  middleware: memberReads,
  request: { headers: TenantHeaderSchema.merge(bookmarkHeaders) },
  responses: withAccessErrors("tenantMember", {
    200: json(SubscriptionSchema, "The current subscription"),
    400: errors[400],
    404: errors[404],
  }),
});

const actionResponses = withAccessErrors("tenantMember", {
  201: json(SubscriptionSchema, "Done"),
  400: errors[400],
  404: errors[404],
  409: errors[409],
});

const cancel = createRoute({
  method: "post",
  path: "/subscriptions/{id}/cancel",
  tags: ["subscriptions"],
  summary:
    "Cancels now, or at the end of the current period with atPeriodEnd (OWNER, ADMIN); a second cancel is a 409",
  security: bearerSecurity,
  middleware: manager,
  request: {
    headers: TenantHeaderSchema,
    params: IdParams,
    body: { ...jsonBody(CancelBody), required: false },
  },
  responses: actionResponses,
});

const action = (path: string, summary: string) =>
  createRoute({
    method: "post",
    path,
    tags: ["subscriptions"],
    summary,
    security: bearerSecurity,
    middleware: manager,
    request: { headers: TenantHeaderSchema, params: IdParams },
    responses: actionResponses,
  });

const pauseRoute = action(
  "/subscriptions/{id}/pause",
  "Pauses a subscription: entitlements are withheld until it resumes (OWNER, ADMIN)",
);
const resumeRoute = action(
  "/subscriptions/{id}/resume",
  "Resumes a paused subscription (OWNER, ADMIN)",
);

export const subscriptionRoutes = ({
  subscriptionService,
  subscriptionReader,
}: SubscriptionRouteServices) =>
  createRouter()
    .openapi(subscribe, async (c) =>
      c.json(await subscriptionService(c).subscribe(c.var.tenantContext, c.req.valid("json")), 201),
    )
    .openapi(listSubscriptions, async (c) =>
      c.json(await subscriptionReader(c).list(c.var.tenantContext, c.req.valid("query")), 200),
    )
    .openapi(currentSubscription, async (c) =>
      c.json(await subscriptionReader(c).current(c.var.tenantContext), 200),
    )
    .openapi(cancel, async (c) => {
      const body = c.req.valid("json") as { atPeriodEnd?: boolean } | undefined;
      return c.json(
        await subscriptionService(c).cancel(
          c.var.tenantContext,
          c.req.valid("param").id,
          body?.atPeriodEnd === true,
        ),
        201,
      );
    })
    .openapi(pauseRoute, async (c) =>
      c.json(await subscriptionService(c).pause(c.var.tenantContext, c.req.valid("param").id), 201),
    )
    .openapi(resumeRoute, async (c) =>
      c.json(
        await subscriptionService(c).resume(c.var.tenantContext, c.req.valid("param").id),
        201,
      ),
    );
