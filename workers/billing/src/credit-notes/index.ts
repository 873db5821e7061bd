// The credit-notes capability's only entry for the rest of the worker (what it owns: README.md).
export type { CreditNoteRouteServices } from "./route-services.ts";
export { creditNoteRoutes } from "./routes.ts";
export {
  CreditNoteService,
  type CreditNoteView,
  type TakeBackReservation,
  type TopUpTakeBack,
} from "./service.ts";
