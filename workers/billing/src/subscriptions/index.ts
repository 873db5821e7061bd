// The subscriptions capability's only entry for the rest of the worker (what it owns: README.md).
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
