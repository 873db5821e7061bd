import { database } from "@edge-platform/shared/db/client";
import type { Context } from "hono";
import { auditContext } from "../audit/index.ts";
import { EntitlementService } from "../entitlements/index.ts";
import { scheduledBillingCycle } from "../invoicing/index.ts";
import type { AppEnv } from "../platform/index.ts";
import { SubscriptionService } from "../subscriptions/index.ts";
import { FeatureService } from "./feature-service.ts";
import { PlanEntitlementService } from "./plan-entitlement-service.ts";
import { PlanService } from "./plan-service.ts";

export const planService = (c: Context<AppEnv>) =>
  new PlanService(database(c.env.DB), auditContext(c));
export const featureService = (c: Context<AppEnv>) => new FeatureService(database(c.env.DB));
export const planEntitlementService = (c: Context<AppEnv>) =>
  new PlanEntitlementService(database(c.env.DB), auditContext(c));
export const subscriptionService = (c: Context<AppEnv>) =>
  new SubscriptionService(
    database(c.env.DB),
    c.env.ENTITLEMENT_COUNTER,
    (found, now) =>
      // Built only when a resume has a period to bill (it reads the provider configuration).
      scheduledBillingCycle(c.env).closePausedPeriod(found, now),
    auditContext(c),
  );
/** Display reads of a route behind `replicaReads()`: through its D1 session (read replicas). */
export const subscriptionReader = (c: Context<AppEnv>) =>
  new SubscriptionService(
    database(c.var.replicaSession as unknown as D1Database),
    c.env.ENTITLEMENT_COUNTER,
    undefined,
    auditContext(c),
  );
/** The catalog lookup that tells an unknown feature (404) from a denial may lag: a replica serves it. */
export const entitlementService = (c: Context<AppEnv>) =>
  new EntitlementService(c.env.ENTITLEMENT_COUNTER, () =>
    database(c.env.DB.withSession("first-unconstrained") as unknown as D1Database),
  );
