export { runSubscriptionJobs } from "./jobs.ts";
export { subscriptionRoutes } from "./routes.ts";
export { SubscriptionService } from "./service.ts";
export {
  type EntitlementSnapshotRow,
  findCurrentSubscription,
  findSubscription,
  findSubscriptionById,
  listSnapshots,
  type SubscriptionWithPlan,
  subscriptionsWithPlan,
} from "./storage.ts";
