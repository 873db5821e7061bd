// The credits capability's only entry for the rest of the worker (what it owns: README.md).
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
  takeBackReference,
  usageCostCents,
} from "./domain/credits.ts";
export type { CreditRouteServices } from "./route-services.ts";
export { creditRoutes } from "./routes.ts";
export {
  CreditService,
  type TakeBackRefusal,
  type TopUpTakeBackReservation,
} from "./service.ts";
