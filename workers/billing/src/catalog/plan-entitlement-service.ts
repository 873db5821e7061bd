import {
  dimensionsMeterProblem,
  type EntitlementTerms,
  type EntitlementTermsInput,
  resolveEntitlementTerms,
} from "@edge-platform/shared/billing/entitlement-rules";
import type { Meter } from "@edge-platform/shared/billing/meter";
import { type Database, nowIso, uniqueViolation } from "@edge-platform/shared/db/client";
import type { FeatureType } from "@edge-platform/shared/db/schema/catalog";
import { ApiError } from "@edge-platform/shared/http/api-error";
import { type AuditContext, fieldChanges, ROW_CHANGED, SYSTEM_AUDIT } from "../audit/index.ts";
import { FeatureService } from "./feature-service.ts";
import { PlanService } from "./plan-service.ts";
import {
  deletePlanEntitlement,
  findPlanEntitlement,
  insertPlanEntitlement,
  listPlanEntitlements,
  updatePlanEntitlement,
} from "./storage.ts";
import { planEntitlementView } from "./views.ts";

const entitlementNotFound = () =>
  new ApiError(404, "Entitlement not found or does not belong to this plan");

function termsOf(row: EntitlementTerms): EntitlementTerms {
  return {
    value: row.value,
    limit: row.limit,
    limitBehavior: row.limitBehavior,
    overagePrice: row.overagePrice,
    includedAmount: row.includedAmount,
    resetPeriod: row.resetPeriod,
    pricing: row.pricing,
    overagePriceDecimal: row.overagePriceDecimal ?? null,
    dimensions: row.dimensions ?? null,
  };
}

/**
 * The terms for the feature, or the refusal: a type rule broken is a 400;
 * dimensions that name a property the feature's meter does not group by
 * are well-formed but do not fit the feature, a 422.
 */
function termsFor(
  feature: { type: FeatureType; meter: Meter | null },
  input: EntitlementTermsInput,
  current?: EntitlementTerms,
): EntitlementTerms {
  const resolved = resolveEntitlementTerms(feature.type, input, current);
  if (!resolved.ok) throw new ApiError(400, resolved.message);
  const problem = dimensionsMeterProblem(resolved.terms.dimensions, feature.meter);
  if (problem) throw new ApiError(422, problem, { code: "dimensions_not_grouped" });
  return resolved.terms;
}

/**
 * What each plan grants of each feature. The feature's type decides which
 * terms apply (domain/entitlement-rules.ts). Existing subscribers never see
 * these edits: they hold snapshots.
 */
export class PlanEntitlementService {
  private readonly plans: PlanService;
  private readonly features: FeatureService;

  constructor(
    private readonly db: Database,
    audit: AuditContext = SYSTEM_AUDIT,
  ) {
    this.plans = new PlanService(db, audit);
    this.features = new FeatureService(db);
  }

  async create(planId: string, input: EntitlementTermsInput & { featureId: string }) {
    const plan = await this.plans.require(planId);
    if (plan.status !== "ACTIVE") {
      throw new ApiError(
        400,
        `Plan "${plan.slug}" is archived - cannot add entitlements to archived plans`,
      );
    }
    const feature = await this.features.require(input.featureId);
    if (feature.status !== "ACTIVE") {
      throw new ApiError(
        400,
        `Feature "${feature.lookupKey}" is archived - cannot use archived features`,
      );
    }
    const { featureId, ...sent } = input;
    const terms = termsFor(feature, sent);
    const now = nowIso();
    const values = {
      id: crypto.randomUUID(),
      planId,
      featureId,
      ...terms,
      createdAt: now,
      updatedAt: now,
    };
    try {
      const [[row]] = await this.db.batch([
        insertPlanEntitlement(this.db, values),
        this.plans.catalogEntry("entitlement.created", "entitlement", values.id, {
          ...fieldChanges(null, values),
          feature: { after: feature.lookupKey },
        }),
      ]);
      if (!row) throw new Error("entitlement insert returned no row");
      return planEntitlementView(row, feature);
    } catch (error) {
      if (uniqueViolation(error)?.startsWith("plan_entitlements.")) {
        throw new ApiError(
          409,
          `Plan "${plan.slug}" already has an entitlement for feature "${feature.lookupKey}"`,
        );
      }
      throw error;
    }
  }

  async list(planId: string) {
    await this.plans.require(planId);
    const rows = await listPlanEntitlements(this.db, planId);
    return { data: rows.map((row) => planEntitlementView(row.entitlement, row.feature)) };
  }

  async get(planId: string, id: string) {
    const found = await findPlanEntitlement(this.db, planId, id);
    if (!found) throw entitlementNotFound();
    return planEntitlementView(found.entitlement, found.feature);
  }

  /**
   * Merges the change over the stored terms and checks the whole against the
   * type's rules. The write only lands if the row still holds the terms that
   * were checked, so two concurrent edits cannot combine into a row neither
   * would have been allowed to write.
   */
  async update(planId: string, id: string, input: EntitlementTermsInput) {
    const found = await findPlanEntitlement(this.db, planId, id);
    if (!found) throw entitlementNotFound();
    const current = termsOf(found.entitlement);
    const terms = termsFor(found.feature, input, current);
    const [[updated]] = await this.db.batch([
      updatePlanEntitlement(this.db, planId, id, current, terms),
      this.plans.catalogEntry(
        "entitlement.updated",
        "entitlement",
        id,
        fieldChanges(current, terms),
        ROW_CHANGED,
      ),
    ]);
    if (!updated) {
      throw new ApiError(409, "The entitlement was changed at the same time; fetch it and retry");
    }
    return planEntitlementView(updated, found.feature);
  }

  async remove(planId: string, id: string) {
    const found = await findPlanEntitlement(this.db, planId, id);
    if (!found) throw entitlementNotFound();
    const [[deleted]] = await this.db.batch([
      deletePlanEntitlement(this.db, planId, id),
      this.plans.catalogEntry(
        "entitlement.deleted",
        "entitlement",
        id,
        { ...fieldChanges(found.entitlement, null), feature: { before: found.feature.lookupKey } },
        ROW_CHANGED,
      ),
    ]);
    if (!deleted) throw entitlementNotFound();
    return planEntitlementView(deleted, found.feature);
  }
}
