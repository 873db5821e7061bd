import { type Database, uniqueViolation } from "@edge-platform/shared/db/client";
import { ApiError } from "@edge-platform/shared/http/api-error";
import { type AuditContext, auditEntry, SYSTEM_AUDIT } from "../audit/index.ts";
import type { TenantContext } from "../platform/index.ts";
import {
  findMembershipWithTenant,
  findUserById,
  hashPassword,
  MANAGERS,
  type MembershipRole,
  mayManageMembership,
  roleRequirementMessage,
  type UserRow,
  UUID_PATTERN,
} from "../platform/index.ts";
import { findMembership, insertMembership } from "./tenant-storage.ts";
import { findUserByEmail, insertUser, shareATenant, updateUser } from "./user-storage.ts";
import { publicProfile, safeUser } from "./views.ts";

export interface UserChanges {
  firstName?: string | undefined;
  lastName?: string | undefined;
  isActive?: boolean | undefined;
}

const notFound = (id: string) => new ApiError(404, `User with ID "${id}" not found`);

export class UserService {
  constructor(
    private readonly db: Database,
    private readonly audit: AuditContext = SYSTEM_AUDIT,
  ) {}

  /** Full record for oneself, co-members and platform admins; a public profile (no email) otherwise. */
  async get(caller: UserRow, id: string) {
    const user = await findUserById(this.db, id);
    if (!user) throw notFound(id);
    if (
      caller.id === user.id ||
      caller.isPlatformAdmin ||
      (await shareATenant(this.db, caller.id, user.id))
    ) {
      return safeUser(user);
    }
    return publicProfile(user);
  }

  /**
   * Self-service for names; another user's names need OWNER or ADMIN in an
   * ACTIVE tenant (`x-tenant-id`) the target belongs to, and an ADMIN may
   * not edit an OWNER. `isActive` is global (it locks the user out of every
   * tenant), so only a platform admin may change it.
   */
  async update(
    caller: UserRow,
    id: string,
    changes: UserChanges,
    tenantHeader: string | undefined,
  ) {
    if (changes.isActive !== undefined) {
      if (caller.id === id) throw new ApiError(403, "Cannot change your own active status");
      if (!caller.isPlatformAdmin) {
        throw new ApiError(403, "Only a platform admin can change a user's active status");
      }
    }
    if (caller.id !== id && !caller.isPlatformAdmin) {
      await this.assertMayEditOther(caller, id, tenantHeader?.trim());
    }
    const updated = await updateUser(this.db, id, {
      ...(changes.firstName !== undefined ? { firstName: changes.firstName } : {}),
      ...(changes.lastName !== undefined ? { lastName: changes.lastName } : {}),
      ...(changes.isActive !== undefined ? { isActive: changes.isActive } : {}),
    });
    if (!updated) throw notFound(id);
    return safeUser(updated);
  }

  private async assertMayEditOther(caller: UserRow, id: string, tenantId: string | undefined) {
    if (!tenantId) throw new ApiError(400, "x-tenant-id header is required to update another user");
    if (!UUID_PATTERN.test(tenantId)) throw new ApiError(400, "x-tenant-id must be a valid UUID");
    const own = await findMembershipWithTenant(this.db, caller.id, tenantId.toLowerCase());
    if (!own) throw new ApiError(403, "You do not have access to this tenant");
    if (!MANAGERS.includes(own.role)) throw new ApiError(403, roleRequirementMessage(MANAGERS));
    if (own.tenant.status !== "ACTIVE") {
      throw new ApiError(
        403,
        `Tenant is ${own.tenant.status.toLowerCase()}: it can be read but not changed`,
      );
    }
    const target = await findMembership(this.db, own.tenant.id, id);
    if (!target) throw notFound(id);
    if (!mayManageMembership(own.role, target.role)) {
      throw new ApiError(403, "Only an OWNER can update an OWNER");
    }
  }

  /**
   * Adds a member with `role`: a new account (user and membership in one
   * batch), or an existing one found by email, whose password and names
   * are then left as they are.
   */
  async addToTenant(
    context: TenantContext,
    input: {
      email: string;
      password: string;
      firstName: string;
      lastName: string;
      role: MembershipRole;
    },
  ) {
    const existing = await findUserByEmail(this.db, input.email);
    if (existing) return this.addMembership(context, existing, input.role);
    const now = new Date().toISOString();
    const user: UserRow = {
      id: crypto.randomUUID(),
      email: input.email,
      passwordHash: await hashPassword(input.password),
      firstName: input.firstName,
      lastName: input.lastName,
      isActive: true,
      isPlatformAdmin: false,
      tokenVersion: 0,
      createdAt: now,
      updatedAt: now,
    };
    try {
      await this.db.batch([
        insertUser(this.db, user),
        insertMembership(this.db, {
          id: crypto.randomUUID(),
          userId: user.id,
          tenantId: context.tenant.id,
          role: input.role,
        }),
        this.membershipAdded(context, user, input.role, true),
      ]);
      return { ...safeUser(user), role: input.role };
    } catch (error) {
      if (uniqueViolation(error) !== "users.email") throw error;
      // Someone registered this email between our read and write: add them instead.
      const raced = await findUserByEmail(this.db, input.email);
      if (!raced) throw error;
      return this.addMembership(context, raced, input.role);
    }
  }

  private membershipAdded(
    context: TenantContext,
    user: UserRow,
    role: MembershipRole,
    newAccount: boolean,
  ) {
    return auditEntry(this.db, this.audit, {
      tenantId: context.tenant.id,
      action: "membership.added",
      targetType: "membership",
      targetId: user.id,
      changes: {
        role: { after: role },
        email: { after: user.email },
        newAccount: { after: newAccount },
      },
    });
  }

  private async addMembership(context: TenantContext, user: UserRow, role: MembershipRole) {
    try {
      await this.db.batch([
        insertMembership(this.db, {
          id: crypto.randomUUID(),
          userId: user.id,
          tenantId: context.tenant.id,
          role,
        }),
        this.membershipAdded(context, user, role, false),
      ]);
    } catch (error) {
      if (uniqueViolation(error) === "memberships.user_id, memberships.tenant_id") {
        throw new ApiError(409, `User "${user.email}" is already a member of this tenant`, {
          code: "already_member",
        });
      }
      throw error;
    }
    return { ...safeUser(user), role };
  }
}
