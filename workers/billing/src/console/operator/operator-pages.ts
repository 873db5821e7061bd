import type { Hono } from "hono";
import type { ApiFetch } from "../api-fetch.ts";
import type { ConsoleEnv } from "../session.ts";
import { registerCatalogPages } from "./catalog.ts";
import { registerCreditNoteIssuePages } from "./credit-note.ts";
import { registerDeadLetterPages } from "./dead-letters.ts";
import { registerSettlementPages } from "./settlement.ts";
import { registerTenantListPages } from "./tenants.ts";

/** The platform administrators' screens, in the order of the navigation. */
export function registerOperatorPages(app: Hono<ConsoleEnv>, fetchApi: ApiFetch) {
  registerTenantListPages(app, fetchApi);
  registerCatalogPages(app, fetchApi);
  registerSettlementPages(app, fetchApi);
  registerCreditNoteIssuePages(app, fetchApi);
  registerDeadLetterPages(app, fetchApi);
}
