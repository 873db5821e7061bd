export type { SubscriptionRouteServices } from "./route-services.ts";
export { subscriptionRoutes } from "./routes.ts";
export { refreshEntitlementCounter, SubscriptionService } from "./service.ts";
export {
  activateAfterTrial,
  endAtPeriodEnd,
  findCurrentSubscription,
  findSubscription,
  findSubscriptionById,
  listSnapshots,
  rollEndedPeriod,
  rollPeriod,
  type SubscriptionWithPlan,
  subscriptionsWithPlan,
} from "./storage.ts";
