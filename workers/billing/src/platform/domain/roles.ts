import type { membershipRoles } from "@edge-platform/shared/db/schema/identity";

export type MembershipRole = (typeof membershipRoles)[number];

export const MANAGERS: readonly MembershipRole[] = ["OWNER", "ADMIN"];
export const EVERY_ROLE: readonly MembershipRole[] = ["OWNER", "ADMIN", "DEVELOPER", "BILLING"];
/** Roles that `POST /users` may grant; ownership is only ever created with a tenant. */
export const GRANTABLE_ROLES = ["ADMIN", "DEVELOPER", "BILLING"] as const;

export function roleRequirementMessage(roles: readonly MembershipRole[]): string {
  return `This action requires one of these roles: ${roles.join(", ")}`;
}

/**
 * Whether `actor` may change or remove a membership currently holding
 * `targetRole`, or hand out `newRole`. Only an OWNER touches ownership, so an
 * ADMIN can neither demote an OWNER nor promote anyone (themselves included)
 * to OWNER.
 */
export function mayManageMembership(
  actor: MembershipRole,
  targetRole: MembershipRole,
  newRole?: MembershipRole,
): boolean {
  if (actor === "OWNER") return true;
  if (actor !== "ADMIN") return false;
  return targetRole !== "OWNER" && newRole !== "OWNER";
}

/** Who may read a tenant's money (invoices, ledger, balance, payments). */
export const MONEY_READERS: readonly MembershipRole[] = ["OWNER", "ADMIN", "BILLING"];

export const SETTLEMENT_REQUIRES_PLATFORM_ADMIN =
  "Only platform administrators and the billing cycle generate, finalize, void or mark invoices paid";

interface MoneyActor {
  role: MembershipRole | null;
  platformAdmin: boolean;
}

/** Tenants are the platform's customers: they read their money and pay through the provider. */
export function mayReadMoney(actor: MoneyActor): boolean {
  return actor.platformAdmin || (actor.role !== null && MONEY_READERS.includes(actor.role));
}

/** Settling an invoice (generate, finalize, void, mark paid) is never the customer's own act. */
export function maySettle(actor: MoneyActor): boolean {
  return actor.platformAdmin;
}

/**
 * Who configures where a tenant's billing events are sent (webhook
 * endpoints, secrets, resends): OWNER and ADMIN, and platform
 * administrators. BILLING reads endpoints and their delivery logs only:
 * pointing the tenant's data at a new URL is an administrator's act.
 */
export const WEBHOOK_MANAGERS: readonly MembershipRole[] = MANAGERS;

export function mayManageWebhooks(actor: MoneyActor): boolean {
  return actor.platformAdmin || (actor.role !== null && WEBHOOK_MANAGERS.includes(actor.role));
}
