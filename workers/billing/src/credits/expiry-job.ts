import { database } from "@edge-platform/shared/db/client";
import { configuredPaymentProvider } from "../invoicing/index.ts";
import { PaymentService, refreshCreditsOf } from "../payments/index.ts";
import { CreditService } from "./service.ts";

/** The Cron Trigger's write-off of credit grants past their expiry; answers how many it ended. */
export function expireCreditGrants(env: Env, now: Date): Promise<number> {
  const db = database(env.DB);
  const payments = new PaymentService(
    db,
    env.DB,
    configuredPaymentProvider(env),
    undefined,
    refreshCreditsOf(env),
  );
  return new CreditService(db, env.DB, env.ENTITLEMENT_COUNTER, payments).expireDue(now);
}
