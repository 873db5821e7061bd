import { type EventProperties, propertiesProblem } from "@edge-platform/shared/billing/meter";
import { ApiError } from "@edge-platform/shared/http/api-error";
import { createRoute } from "@hono/zod-openapi";
import { CheckSchema, ConsumeBody, ConsumeSchema, FeatureKeyParam } from "../catalog/index.ts";
import {
  callerTenant,
  counterIdempotency,
  createRouter,
  errors,
  IDEMPOTENT_REPLAYED_HEADER,
  json,
  jsonBody,
  memberOrApiKey,
  withAccessErrors,
} from "../platform/index.ts";
import type { EntitlementRouteServices } from "./route-services.ts";

/** Either credential: the tenant's API key, or a member's access token with x-tenant-id. */
const security: Record<string, string[]>[] = [{ apiKey: [] }, { bearerAuth: [] }];

const check = createRoute({
  method: "get",
  path: "/entitlements/{featureKey}/check",
  tags: ["entitlements"],
  summary:
    "Whether the tenant may use a feature now, with usage and resetAt (tenant API key, or member JWT + x-tenant-id)",
  description:
    "Always 200 for a known caller: `allowed` false comes with a `reason` (no current subscription, paused, feature not in the plan, BOOLEAN off, HARD quota used up). Never changes usage.",
  security,
  middleware: [memberOrApiKey()] as const,
  request: { params: FeatureKeyParam },
  responses: withAccessErrors("memberOrApiKey", {
    200: json(CheckSchema, "The decision"),
    400: errors[400],
    404: errors[404],
    503: errors[503],
  }),
});

const consume = createRoute({
  method: "post",
  path: "/entitlements/{featureKey}/consume",
  tags: ["entitlements"],
  summary:
    "Uses `amount` units of a QUOTA or METERED feature, atomically against the limit (tenant API key, or member JWT + x-tenant-id)",
  description:
    "HARD quota: all or nothing, 403 when the units would pass the limit. SOFT quota and METERED: always taken, `overage` true beyond the limit or included amount; priced units draw the tenant's credit balance. On a prepaid price, units whose cost the balance that applies cannot pay for are refused whole with 402 (`code: CREDITS_EXHAUSTED`, `creditBalance`): nothing taken, nothing drawn. BOOLEAN: 400. No current subscription or feature not in the plan: 403. A feature with a meter reads `properties`: its units are the meter's (COUNT 1, SUM the property's value, UNIQUE_COUNT 1 for a distinct value the window has not counted and 0 for one it has); a property the meter needs is missing or not a number: 422.",
  security,
  middleware: [memberOrApiKey()] as const,
  request: { params: FeatureKeyParam, body: jsonBody(ConsumeBody) },
  responses: withAccessErrors("memberOrApiKey", {
    200: json(ConsumeSchema, "Consumed"),
    400: errors[400],
    402: errors[402],
    404: errors[404],
    409: errors[409],
    422: errors[422],
    503: errors[503],
  }),
});

export const entitlementRoutes = ({ entitlementService }: EntitlementRouteServices) =>
  createRouter()
    .openapi(check, async (c) =>
      c.json(
        await entitlementService(c).check(callerTenant(c), c.req.valid("param").featureKey),
        200,
      ),
    )
    .openapi(consume, async (c) => {
      const keyed = counterIdempotency(c);
      const { amount, properties } = c.req.valid("json");
      const problem = propertiesProblem(properties);
      if (problem) throw new ApiError(422, problem.message, { code: "invalid_properties" });
      const { answer, replayed } = await entitlementService(c).consume(
        callerTenant(c),
        c.req.valid("param").featureKey,
        amount,
        keyed && { ...keyed, correlationId: c.var.correlationId },
        properties as EventProperties | undefined,
      );
      if (replayed) c.header(IDEMPOTENT_REPLAYED_HEADER, "true");
      return c.json(answer, 200);
    });
