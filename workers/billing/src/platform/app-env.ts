import type { CorrelationIdVariables } from "@edge-platform/shared/http/correlation-id";
import type { ApiKeyRow, TenantRow, UserRow } from "./access-storage.ts";
import type { ApiKeyVerifier } from "./api-key-verification.ts";
import type { MembershipRole } from "./domain/roles.ts";
import type { IdempotencyVariables } from "./idempotency-state.ts";
import type { MailSender } from "./mail-sender.ts";

export interface TenantContext {
  tenant: TenantRow;
  role: MembershipRole;
}

/** What a tenant-scoped service needs of the caller's context: the tenant. */
export interface TenantScoped {
  tenant: TenantRow;
}

/**
 * Who acts on a tenant's money routes: a member with a role, or a platform
 * administrator, who may act on any tenant without being a member.
 */
export interface BillingContext {
  tenant: TenantRow;
  /** Null for a platform administrator who is not a member of the tenant. */
  role: MembershipRole | null;
  platformAdmin: boolean;
}

export type AppVariables = CorrelationIdVariables &
  IdempotencyVariables &
  AuditReaderVariables & {
    /** Set by `authenticate()`: the active user behind a valid access token. */
    user: UserRow;
    /** Set by `tenantContext()`: the `x-tenant-id` tenant and the caller's role in it. */
    tenantContext: TenantContext;
    /** Set by `billingContext()`: the `x-tenant-id` tenant on the money routes. */
    billingContext: BillingContext;
    /** Set by `authenticateApiKey()`: the key; its tenant is the request's tenant. */
    apiKey: ApiKeyRow;
    /** Set by `createApp()` when the app brings its own (tests); otherwise the isolate's. */
    apiKeyVerifier: ApiKeyVerifier | undefined;
    /** Set by `replicaReads()`: the D1 session display reads go through. */
    replicaSession: D1DatabaseSession;
    mailSender: MailSender;
  };

export type AppEnv = {
  Bindings: Env;
  Variables: AppVariables;
};

export type AuditReaderVariables = {
  /** The tenant whose events the caller may read; null: every tenant (platform administrators). */
  auditScope: { tenantId: string | null };
};
