import {
  DevelopmentPaymentProvider,
  fixedOutcome,
  fixedRefundOutcome,
} from "./development-provider.ts";
import type { PaymentProvider } from "./payment-provider.ts";
import { PayProviderPaymentProvider } from "./payprovider.ts";

/** Optional settings read by `paymentProviderFromEnv` (secrets and vars). */
export interface PaymentProviderSettings {
  ENVIRONMENT?: string;
  /** `development` or `payprovider`; default: development in development/test, payprovider otherwise. */
  PAYMENT_PROVIDER?: string;
  PAYPROVIDER_API_KEY?: string;
  PAYPROVIDER_API_BASE?: string;
  /** Minutes an attempt may stay PENDING before the billing cycle asks the provider (default 60). */
  PAYMENT_PENDING_RECONCILE_MINUTES?: string;
  /** Development provider only: the outcome of every payment (default `pending`). */
  DEV_PAYMENT_OUTCOME?: string;
  /** Development provider only: the outcome of every refund (default `succeeded`). */
  DEV_REFUND_OUTCOME?: string;
}

export function isDevelopmentEnvironment(environment: string | undefined): boolean {
  return environment === "development" || environment === "test";
}

export class PaymentProviderConfigError extends Error {
  override name = "PaymentProviderConfigError";
}

/**
 * The configured provider. The development provider is refused outside
 * development and test, so production can never "pay" invoices without a
 * real provider.
 */
export function paymentProviderFromEnv(env: PaymentProviderSettings): PaymentProvider {
  const development = isDevelopmentEnvironment(env.ENVIRONMENT);
  const kind = env.PAYMENT_PROVIDER || (development ? "development" : "payprovider");
  if (kind === "development") {
    if (!development) {
      throw new PaymentProviderConfigError(
        "PAYMENT_PROVIDER=development is only allowed when ENVIRONMENT is development or test",
      );
    }
    return new DevelopmentPaymentProvider(
      fixedOutcome(env.DEV_PAYMENT_OUTCOME),
      undefined,
      fixedRefundOutcome(env.DEV_REFUND_OUTCOME),
    );
  }
  if (kind === "payprovider") {
    if (!env.PAYPROVIDER_API_KEY) {
      throw new PaymentProviderConfigError("PAYPROVIDER_API_KEY is not set");
    }
    return new PayProviderPaymentProvider({
      apiKey: env.PAYPROVIDER_API_KEY,
      baseUrl: env.PAYPROVIDER_API_BASE || "https://api.stripe.com",
    });
  }
  throw new PaymentProviderConfigError(`Unknown PAYMENT_PROVIDER "${kind}"`);
}
