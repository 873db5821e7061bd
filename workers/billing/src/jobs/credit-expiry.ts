import { database } from "@edge-platform/shared/db/client";
import { CreditService } from "../services/credits.ts";
import { PaymentService, refreshCreditsOf } from "../services/payments.ts";
import { configuredPaymentProvider } from "./billing-cycle.ts";

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
