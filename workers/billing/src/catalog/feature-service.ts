import { featureUnitProblem } from "@edge-platform/shared/billing/entitlement-rules";
import { type Database, nowIso, uniqueViolation } from "@edge-platform/shared/db/client";
import type { CatalogStatus, FeatureType } from "@edge-platform/shared/db/schema/catalog";
import { ApiError } from "@edge-platform/shared/http/api-error";
import {
  type FeatureRow,
  findFeatureById,
  findFeatureByLookupKey,
  insertFeature,
  listFeatures,
  updateFeature,
} from "./storage.ts";
import { featureView } from "./views.ts";

export const featureNotFound = (id: string) =>
  new ApiError(404, `Feature with ID "${id}" not found`);

export interface FeatureInput {
  name: string;
  lookupKey: string;
  type: FeatureType;
  unit?: string | null | undefined;
  description?: string | null | undefined;
  metadata?: Record<string, unknown> | undefined;
}

export interface FeatureChanges {
  name?: string | undefined;
  unit?: string | null | undefined;
  description?: string | null | undefined;
  status?: CatalogStatus | undefined;
  metadata?: Record<string, unknown> | undefined;
}

export class FeatureService {
  constructor(private readonly db: Database) {}

  async create(input: FeatureInput) {
    const unitProblem = featureUnitProblem(input.type, input.unit);
    if (unitProblem) throw new ApiError(400, unitProblem);
    const now = nowIso();
    try {
      const feature = await insertFeature(this.db, {
        id: crypto.randomUUID(),
        name: input.name,
        lookupKey: input.lookupKey,
        type: input.type,
        unit: input.unit ?? null,
        description: input.description ?? null,
        metadata: input.metadata ?? {},
        createdAt: now,
        updatedAt: now,
      });
      return featureView(feature);
    } catch (error) {
      if (uniqueViolation(error) === "features.lookup_key") {
        throw new ApiError(409, `Feature with lookup key "${input.lookupKey}" already exists`);
      }
      throw error;
    }
  }

  async list(includeArchived: boolean) {
    const statuses: CatalogStatus[] = includeArchived ? ["ACTIVE", "ARCHIVED"] : ["ACTIVE"];
    return { data: (await listFeatures(this.db, statuses)).map(featureView) };
  }

  async get(id: string) {
    return featureView(await this.require(id));
  }

  async getByLookupKey(lookupKey: string) {
    const feature = await findFeatureByLookupKey(this.db, lookupKey);
    if (!feature) throw new ApiError(404, `Feature with lookup key "${lookupKey}" not found`);
    return featureView(feature);
  }

  async update(id: string, changes: FeatureChanges) {
    const feature = await this.require(id);
    if (changes.unit !== undefined) {
      const unitProblem = featureUnitProblem(feature.type, changes.unit);
      if (unitProblem) throw new ApiError(400, unitProblem);
    }
    const updated = await updateFeature(this.db, id, changes);
    if (!updated) throw featureNotFound(id);
    return featureView(updated);
  }

  async require(id: string): Promise<FeatureRow> {
    const feature = await findFeatureById(this.db, id);
    if (!feature) throw featureNotFound(id);
    return feature;
  }
}
