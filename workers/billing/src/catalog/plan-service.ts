import { type Database, nowIso, uniqueViolation } from "@edge-platform/shared/db/client";
import type { AuditChanges } from "@edge-platform/shared/db/schema/audit";
import type {
  BillingInterval,
  CatalogStatus,
  UsageThreshold,
} from "@edge-platform/shared/db/schema/catalog";
import { ApiError } from "@edge-platform/shared/http/api-error";
import type { SQL } from "drizzle-orm";
import {
  type AuditAction,
  type AuditContext,
  auditEntry,
  fieldChanges,
  ROW_CHANGED,
  SYSTEM_AUDIT,
} from "../audit/index.ts";
import {
  findPlanById,
  findPlanBySlug,
  findPlanPrice,
  insertPlan,
  insertPlanPrice,
  listPlanPrices,
  listPlans,
  type PlanRow,
  updatePlan,
  updatePlanPrice,
} from "./storage.ts";
import { planView, priceView } from "./views.ts";

/** The fields a PATCH actually sets (undefined means "leave as is"). */
function definedOnly<T extends object>(changes: T): Partial<T> {
  return Object.fromEntries(
    Object.entries(changes).filter(([, value]) => value !== undefined),
  ) as Partial<T>;
}

export const planNotFound = (id: string) => new ApiError(404, `Plan with ID "${id}" not found`);

export interface PlanInput {
  name: string;
  slug: string;
  description?: string | null | undefined;
  isPublic?: boolean | undefined;
  displayOrder?: number | undefined;
  metadata?: Record<string, unknown> | undefined;
}

export interface PlanChanges {
  name?: string | undefined;
  description?: string | null | undefined;
  status?: CatalogStatus | undefined;
  isPublic?: boolean | undefined;
  displayOrder?: number | undefined;
  metadata?: Record<string, unknown> | undefined;
}

/** Plans and their prices: the global catalog (writes are for platform admins). */
export class PlanService {
  constructor(
    private readonly db: Database,
    private readonly audit: AuditContext = SYSTEM_AUDIT,
  ) {}

  async create(input: PlanInput) {
    const now = nowIso();
    const row = {
      id: crypto.randomUUID(),
      name: input.name,
      slug: input.slug,
      description: input.description ?? null,
      isPublic: input.isPublic ?? true,
      displayOrder: input.displayOrder ?? 0,
      metadata: input.metadata ?? {},
      createdAt: now,
      updatedAt: now,
    };
    try {
      const [[plan]] = await this.db.batch([
        insertPlan(this.db, row),
        this.catalogEntry("plan.created", "plan", row.id, fieldChanges(null, row)),
      ]);
      if (!plan) throw new Error("plan insert returned no row");
      return planView(plan, []);
    } catch (error) {
      if (uniqueViolation(error) === "plans.slug") {
        throw new ApiError(409, `Plan with slug "${input.slug}" already exists`);
      }
      throw error;
    }
  }

  /**
   * ACTIVE plans by display order (ARCHIVED too on request). Plans marked
   * not public are unlisted: only platform admins see them in the list.
   */
  async list(options: { includeArchived: boolean; includeNonPublic: boolean }) {
    const statuses: CatalogStatus[] = options.includeArchived ? ["ACTIVE", "ARCHIVED"] : ["ACTIVE"];
    const plans = await listPlans(this.db, {
      statuses,
      includeNonPublic: options.includeNonPublic,
    });
    const prices = await listPlanPrices(
      this.db,
      plans.map((plan) => plan.id),
      false,
    );
    return { data: plans.map((plan) => planView(plan, prices)) };
  }

  async get(id: string) {
    return this.withPrices(await this.require(id));
  }

  async getBySlug(slug: string) {
    const plan = await findPlanBySlug(this.db, slug);
    if (!plan) throw new ApiError(404, `Plan with slug "${slug}" not found`);
    return this.withPrices(plan);
  }

  async update(id: string, changes: PlanChanges) {
    const before = await this.require(id);
    const [[updated]] = await this.db.batch([
      updatePlan(this.db, id, changes),
      this.catalogEntry(
        "plan.updated",
        "plan",
        id,
        fieldChanges(before, { ...before, ...definedOnly(changes) }, Object.keys(changes)),
        ROW_CHANGED,
      ),
    ]);
    if (!updated) throw planNotFound(id);
    return this.withPrices(updated);
  }

  async createPrice(
    planId: string,
    input: {
      interval: BillingInterval;
      amount: number;
      currency: string;
      trialDays?: number | undefined;
      prepaid?: boolean | undefined;
      usageThresholds?: UsageThreshold[] | undefined;
    },
  ) {
    const plan = await this.require(planId);
    if (plan.status !== "ACTIVE") {
      throw new ApiError(
        400,
        `Plan "${plan.slug}" is archived - cannot add prices to archived plans`,
      );
    }
    const currency = input.currency.toLowerCase();
    const now = nowIso();
    const row = {
      id: crypto.randomUUID(),
      planId,
      interval: input.interval,
      amount: input.amount,
      currency,
      trialDays: input.trialDays ?? null,
      prepaid: input.prepaid ?? false,
      usageThresholds: input.usageThresholds ?? null,
      createdAt: now,
      updatedAt: now,
    };
    try {
      const [[price]] = await this.db.batch([
        insertPlanPrice(this.db, row),
        this.catalogEntry("price.created", "price", row.id, fieldChanges(null, row)),
      ]);
      if (!price) throw new Error("price insert returned no row");
      return priceView(price);
    } catch (error) {
      if (uniqueViolation(error)?.startsWith("plan_prices.")) {
        throw new ApiError(
          409,
          `Plan "${plan.slug}" already has an active ${input.interval} price in ${currency}`,
        );
      }
      throw error;
    }
  }

  async listPrices(planId: string, includeInactive: boolean) {
    await this.require(planId);
    const prices = await listPlanPrices(this.db, [planId], includeInactive);
    return { data: prices.map(priceView) };
  }

  /**
   * Deactivates (permanent; again on an inactive price answers with it
   * unchanged) and/or sets the trial. No body at all deactivates, as the
   * contract's body-less PATCH does.
   */
  async updatePrice(
    planId: string,
    id: string,
    changes: { isActive?: false | undefined; trialDays?: number | null | undefined } = {
      isActive: false,
    },
  ) {
    const existing = await findPlanPrice(this.db, planId, id);
    if (!existing) throw new ApiError(404, "Price not found or does not belong to this plan");
    const deactivate = changes.isActive === false && existing.isActive;
    if (!deactivate && changes.trialDays === undefined) return priceView(existing);
    const after = {
      isActive: deactivate ? false : existing.isActive,
      trialDays: changes.trialDays !== undefined ? changes.trialDays : existing.trialDays,
    };
    const [[updated]] = await this.db.batch([
      updatePlanPrice(this.db, planId, id, {
        isActive: deactivate ? false : undefined,
        trialDays: changes.trialDays,
      }),
      this.catalogEntry(
        "price.updated",
        "price",
        id,
        fieldChanges(existing, after, ["isActive", "trialDays"]),
        ROW_CHANGED,
      ),
    ]);
    return priceView(updated ?? existing);
  }

  async require(id: string): Promise<PlanRow> {
    const plan = await findPlanById(this.db, id);
    if (!plan) throw planNotFound(id);
    return plan;
  }

  /** The catalog is platform-wide: its audit rows have no tenant. */
  catalogEntry(
    action: AuditAction,
    targetType: string,
    targetId: string,
    changes: AuditChanges,
    when?: SQL,
  ) {
    return auditEntry(
      this.db,
      this.audit,
      { tenantId: null, action, targetType, targetId, changes },
      when,
    );
  }

  private async withPrices(plan: PlanRow) {
    return planView(plan, await listPlanPrices(this.db, [plan.id], false));
  }
}
