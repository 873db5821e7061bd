import type { Hono } from "hono";
import type { ApiFetch } from "../api-fetch.ts";
import type { ConsoleEnv } from "../session.ts";
import { registerAlertPages } from "./alerts.ts";
import { registerApiKeyPages } from "./api-keys.ts";
import { registerAuditPages } from "./audit.ts";
import { registerCreditNotePages } from "./credit-notes.ts";
import { registerInvoicePages } from "./invoices.ts";
import { registerMemberPages } from "./members.ts";
import { registerOverviewPages } from "./overview.ts";
import { registerUsagePages } from "./usage.ts";
import { registerWebhookPages } from "./webhooks.ts";

/** The tenant's screens, in the order of the navigation. */
export function registerTenantPages(app: Hono<ConsoleEnv>, fetchApi: ApiFetch) {
  registerOverviewPages(app, fetchApi);
  registerUsagePages(app, fetchApi);
  registerInvoicePages(app, fetchApi);
  registerCreditNotePages(app, fetchApi);
  registerApiKeyPages(app, fetchApi);
  registerMemberPages(app, fetchApi);
  registerAlertPages(app, fetchApi);
  registerWebhookPages(app, fetchApi);
  registerAuditPages(app, fetchApi);
}
