// The notifications capability's only entry for the rest of the worker (what it owns: README.md).
export {
  type NewTenantEvent,
  TENANT_EVENT_TYPES,
  type TenantEvent,
  tenantEvent,
} from "./domain/tenant-events.ts";
export {
  type CountedWindow,
  quotaExhaustedEvent,
  reachedAlertEvents,
  type UsageAlertTerms,
} from "./domain/usage-alerts.ts";
export { deliverySettings } from "./domain/webhook-delivery.ts";
export type { NotificationRouteServices } from "./route-services.ts";
export {
  invoiceEventStatement,
  type SubscriptionChange,
  subscriptionEventEntry,
  tenantEventFromRowStatement,
  tenantEventStatement,
} from "./tenant-event-storage.ts";
export { emitTenantEvents, relayTenantEventsQuietly } from "./tenant-events.ts";
export { usageAlertRoutes } from "./usage-alert-routes.ts";
export { UsageAlertService } from "./usage-alert-service.ts";
export { tenantAlertTerms } from "./usage-alert-storage.ts";
export { consumeOutboundWebhookBatch, isOutboundWebhookQueue } from "./webhook-delivery-job.ts";
export { webhookEndpointRoutes } from "./webhook-endpoint-routes.ts";
export { WebhookEndpointService } from "./webhook-endpoint-service.ts";
export { pruneWebhookHistory } from "./webhook-retention-job.ts";
