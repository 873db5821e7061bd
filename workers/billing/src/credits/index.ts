export {
  applicableBalance,
  type CostWindow,
  CREDITS_EXHAUSTED,
  type DrawContext,
  type GrantBalance,
  isPricedUsage,
  planDraw,
  type StoredGrantStatus,
  type TopUpRequest,
  usageCostCents,
} from "./domain/credits.ts";
export { expireCreditGrants } from "./expiry-job.ts";
export { creditRoutes } from "./routes.ts";
export { startAutoTopUp } from "./service.ts";
export { declinedTopUpStatement } from "./storage.ts";
