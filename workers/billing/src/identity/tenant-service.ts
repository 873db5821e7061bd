import { type Database, nowIso, uniqueViolation } from "@edge-platform/shared/db/client";
import { ApiError } from "@edge-platform/shared/http/api-error";
import type { BatchItem } from "drizzle-orm/batch";
import {
  type AuditContext,
  auditEntry,
  fieldChanges,
  ROW_CHANGED,
  SYSTEM_AUDIT,
  statusChange,
} from "../audit/index.ts";
import type { TenantContext, UserRow } from "../platform/index.ts";
import {
  type ApiKeyVerifier,
  findTenantById,
  isolateApiKeys,
  MANAGERS,
  type MembershipRole,
  mayManageMembership,
  type PageRequest,
  pageMeta,
  pageOffset,
  roleRequirementMessage,
  slugFromName,
  withRandomSuffix,
} from "../platform/index.ts";
import {
  cancelTenantStatements,
  changeMemberRole,
  findMembership,
  findTenantBySlug,
  insertMembership,
  insertTenant,
  listMembers,
  listTenantsOfUser,
  removeMember,
  updateTenant,
} from "./tenant-storage.ts";
import { tenantView, tenantWithRole } from "./views.ts";

/**
 * Statements other modules add to the batch that cancels a tenant, so that
 * their tenant-scoped state (subscriptions, for one) freezes atomically with
 * it. Register from the owning module at import time.
 */
export type TenantCancellationHook = (
  db: Database,
  tenantId: string,
  now: string,
) => BatchItem<"sqlite">[];
export const tenantCancellationHooks: TenantCancellationHook[] = [];

export class TenantService {
  constructor(
    private readonly db: Database,
    private readonly audit: AuditContext = SYSTEM_AUDIT,
    private readonly apiKeys: ApiKeyVerifier = isolateApiKeys,
  ) {}

  /** Tenant and the creator's OWNER membership in one batch; a taken slug is a 409. */
  async create(
    user: UserRow,
    input: {
      name: string;
      slug?: string | undefined;
      metadata?: Record<string, unknown> | undefined;
    },
  ) {
    let slug = input.slug ?? slugFromName(input.name);
    for (let attempt = 0; ; attempt++) {
      const now = nowIso();
      const tenant = {
        id: crypto.randomUUID(),
        name: input.name,
        slug,
        status: "ACTIVE" as const,
        metadata: input.metadata ?? {},
        createdAt: now,
        updatedAt: now,
      };
      try {
        await this.db.batch([
          insertTenant(this.db, tenant),
          insertMembership(this.db, {
            id: crypto.randomUUID(),
            userId: user.id,
            tenantId: tenant.id,
            role: "OWNER",
          }),
        ]);
        return tenantWithRole(tenant, "OWNER");
      } catch (error) {
        if (uniqueViolation(error) !== "tenants.slug") throw error;
        if (input.slug === undefined && attempt === 0) {
          slug = withRandomSuffix(slug);
          continue;
        }
        throw new ApiError(409, `Tenant with slug "${slug}" already exists`, {
          code: "slug_taken",
        });
      }
    }
  }

  async list(user: UserRow, page: PageRequest) {
    const { rows, total } = await listTenantsOfUser(this.db, user.id, pageOffset(page), page.limit);
    return {
      data: rows.map((row) => tenantWithRole(row.tenant, row.role)),
      meta: pageMeta(page, total),
    };
  }

  /** Members see the whole tenant; anyone else learns only that the slug is taken, and by whom. */
  async getBySlug(user: UserRow, slug: string) {
    const tenant = await findTenantBySlug(this.db, slug);
    if (!tenant) throw new ApiError(404, `Tenant with slug "${slug}" not found`);
    const membership = await findMembership(this.db, tenant.id, user.id);
    if (membership) return tenantWithRole(tenant, membership.role);
    return { id: tenant.id, name: tenant.name, slug: tenant.slug };
  }

  get(context: TenantContext, id: string) {
    assertSameTenant(context, id);
    return tenantWithRole(context.tenant, context.role);
  }

  async update(
    context: TenantContext,
    id: string,
    changes: { name?: string | undefined; metadata?: Record<string, unknown> | undefined },
  ) {
    assertSameTenant(context, id);
    const set = {
      ...(changes.name !== undefined ? { name: changes.name } : {}),
      ...(changes.metadata !== undefined ? { metadata: changes.metadata } : {}),
    };
    const before = { name: context.tenant.name, metadata: context.tenant.metadata };
    const [[updated]] = await this.db.batch([
      updateTenant(this.db, id, set),
      auditEntry(
        this.db,
        this.audit,
        {
          tenantId: id,
          action: "tenant.updated",
          targetType: "tenant",
          targetId: id,
          changes: fieldChanges(before, { ...before, ...set }),
        },
        ROW_CHANGED,
      ),
    ]);
    if (!updated) throw new ApiError(404, `Tenant with ID "${id}" not found`);
    return tenantView(updated);
  }

  /** Soft delete: CANCELLED, every API key revoked, hooked state frozen, in one batch. */
  async cancel(context: TenantContext, id: string) {
    assertSameTenant(context, id);
    const now = nowIso();
    const hooked = tenantCancellationHooks.flatMap((hook) => hook(this.db, id, now));
    const [cancelTenant, revokeKeys] = cancelTenantStatements(this.db, id, now);
    await this.db.batch([
      cancelTenant,
      // Right after the tenant's own update: recorded only if it was not cancelled already.
      auditEntry(
        this.db,
        this.audit,
        {
          tenantId: id,
          action: "tenant.deleted",
          targetType: "tenant",
          targetId: id,
          changes: statusChange(context.tenant.status, "CANCELLED", {
            apiKeys: { after: "REVOKED" },
          }),
        },
        ROW_CHANGED,
      ),
      revokeKeys,
      ...hooked,
    ]);
    // Its keys stop working in this isolate now, everywhere within the cache bound.
    await this.apiKeys.forgetTenant(this.db, id);
    const tenant = await findTenantById(this.db, id);
    if (!tenant) throw new ApiError(404, `Tenant with ID "${id}" not found`);
    return tenantView(tenant);
  }

  async members(context: TenantContext, id: string) {
    assertSameTenant(context, id);
    return { data: await listMembers(this.db, id) };
  }

  async changeRole(context: TenantContext, id: string, userId: string, role: MembershipRole) {
    assertSameTenant(context, id);
    const target = await this.memberOrNotFound(id, userId);
    if (!MANAGERS.includes(context.role)) throw new ApiError(403, roleRequirementMessage(MANAGERS));
    if (!mayManageMembership(context.role, target.role, role)) {
      throw new ApiError(403, "Only an OWNER can grant or take away ownership");
    }
    const [[updated]] = await this.db.batch([
      changeMemberRole(this.db, id, userId, role),
      auditEntry(
        this.db,
        this.audit,
        {
          tenantId: id,
          action: "membership.role_changed",
          targetType: "membership",
          targetId: userId,
          changes: fieldChanges({ role: target.role }, { role }),
        },
        ROW_CHANGED,
      ),
    ]);
    if (!updated) throw new ApiError(409, "The last OWNER of a tenant cannot be demoted");
    return { userId: updated.userId, tenantId: updated.tenantId, role: updated.role };
  }

  /** Managers remove members; anyone may leave. The last OWNER can do neither. */
  async removeMember(context: TenantContext, actor: UserRow, id: string, userId: string) {
    assertSameTenant(context, id);
    const target = await this.memberOrNotFound(id, userId);
    if (userId !== actor.id) {
      if (!MANAGERS.includes(context.role))
        throw new ApiError(403, roleRequirementMessage(MANAGERS));
      if (!mayManageMembership(context.role, target.role)) {
        throw new ApiError(403, "Only an OWNER can remove an OWNER");
      }
    }
    const [[removed]] = await this.db.batch([
      removeMember(this.db, id, userId),
      auditEntry(
        this.db,
        this.audit,
        {
          tenantId: id,
          action: "membership.removed",
          targetType: "membership",
          targetId: userId,
          changes: { role: { before: target.role, after: null } },
        },
        ROW_CHANGED,
      ),
    ]);
    if (!removed) throw new ApiError(409, "The last OWNER of a tenant cannot be removed");
    return { userId: removed.userId, tenantId: removed.tenantId, role: removed.role };
  }

  private async memberOrNotFound(tenantId: string, userId: string) {
    const membership = await findMembership(this.db, tenantId, userId);
    if (!membership)
      throw new ApiError(404, `User with ID "${userId}" is not a member of this tenant`);
    return membership;
  }
}

/** Routes naming a tenant in the path act on the `x-tenant-id` tenant only. */
export function assertSameTenant(context: TenantContext, id: string) {
  if (context.tenant.id !== id.toLowerCase()) {
    throw new ApiError(403, "URL tenant ID does not match x-tenant-id header");
  }
}
