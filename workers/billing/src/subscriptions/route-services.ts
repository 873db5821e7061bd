import type { Context } from "hono";
import type { AppEnv } from "../platform/index.ts";
import type { SubscriptionService } from "./service.ts";

/**
 * What the subscriptions routes are handed: each builds a service for one request.
 * The worker's composition root (src/services.ts) implements it.
 */
export interface SubscriptionRouteServices {
  subscriptionService(c: Context<AppEnv>): SubscriptionService;
  subscriptionReader(c: Context<AppEnv>): SubscriptionService;
}
