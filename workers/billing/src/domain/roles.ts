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
