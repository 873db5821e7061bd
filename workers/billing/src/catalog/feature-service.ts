import {
  dimensionsMeterProblem,
  featureUnitProblem,
} from "@edge-platform/shared/billing/entitlement-rules";
import {
  DEFAULT_METER,
  isPlainMeter,
  type Meter,
  meterSchema,
  resolveMeter,
} from "@edge-platform/shared/billing/meter";
import { type Database, nowIso, uniqueViolation } from "@edge-platform/shared/db/client";
import type { CatalogStatus, FeatureType } from "@edge-platform/shared/db/schema/catalog";
import { ApiError } from "@edge-platform/shared/http/api-error";
import {
  type FeatureRow,
  featureHasUsage,
  findFeatureById,
  findFeatureByLookupKey,
  insertFeature,
  listFeatureDimensions,
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
  /** Checked here with meterSchema and resolveMeter (a 422 names the field). */
  meter?: unknown;
}

export interface FeatureChanges {
  name?: string | undefined;
  unit?: string | null | undefined;
  description?: string | null | undefined;
  status?: CatalogStatus | undefined;
  metadata?: Record<string, unknown> | undefined;
  /** A new meter; null: back to the default; absent: unchanged. */
  meter?: unknown;
}

/** A meter's problem: the request is well-formed but the meter does not fit the rules. */
const meterRefused = (message: string) => new ApiError(422, message, { code: "meter_invalid" });

/**
 * The meter to store for a feature of `type`: null for the default meter
 * (absent, null, or a meter that measures as the default does), else the
 * resolved meter. BOOLEAN features have no usage to measure.
 */
export function meterToStore(type: FeatureType, sent: unknown): Meter | null {
  if (sent === undefined || sent === null) return null;
  if (type === "BOOLEAN") {
    throw meterRefused("meter: BOOLEAN features have no usage to measure: leave meter out");
  }
  const parsed = meterSchema.safeParse(sent);
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    const field = ["meter", ...(issue?.path ?? []).map(String)].join(".");
    const message = issue?.message ?? "invalid";
    throw meterRefused(message.startsWith(field) ? message : `${field}: ${message}`);
  }
  const resolved = resolveMeter(parsed.data);
  if (!resolved.ok) throw meterRefused(resolved.message);
  return isPlainMeter(resolved.meter) ? null : resolved.meter;
}

export class FeatureService {
  constructor(private readonly db: Database) {}

  async create(input: FeatureInput) {
    const unitProblem = featureUnitProblem(input.type, input.unit);
    if (unitProblem) throw new ApiError(400, unitProblem);
    const meter = meterToStore(input.type, input.meter);
    const now = nowIso();
    try {
      const feature = await insertFeature(this.db, {
        id: crypto.randomUUID(),
        name: input.name,
        lookupKey: input.lookupKey,
        type: input.type,
        unit: input.unit ?? null,
        meter,
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
    const { meter: sentMeter, ...rest } = changes;
    const meter = sentMeter === undefined ? undefined : await this.meterChange(feature, sentMeter);
    const updated = await updateFeature(this.db, id, {
      ...rest,
      ...(meter !== undefined ? { meter } : {}),
    });
    if (!updated) throw featureNotFound(id);
    return featureView(updated);
  }

  /**
   * The meter a PATCH stores. Counted usage was aggregated one way, so the
   * aggregation is fixed once there is any (summing what was counted as a
   * maximum would bill nonsense); filters, groupBy and property may change:
   * subscribers keep the meter of their snapshot, new ones get the new one.
   * A groupBy must keep the properties plans price groups by.
   */
  private async meterChange(feature: FeatureRow, sent: unknown): Promise<Meter | null> {
    const meter = meterToStore(feature.type, sent);
    const before = feature.meter ?? DEFAULT_METER;
    const after = meter ?? DEFAULT_METER;
    if (
      after.aggregation !== before.aggregation &&
      (await featureHasUsage(this.db, feature.lookupKey))
    ) {
      throw new ApiError(
        409,
        `meter.aggregation cannot change from ${before.aggregation} to ${after.aggregation}: feature "${feature.lookupKey}" has usage (create a new feature for the new measure)`,
        { code: "meter_aggregation_locked" },
      );
    }
    for (const { planSlug, dimensions } of await listFeatureDimensions(this.db, feature.id)) {
      const problem = dimensionsMeterProblem(dimensions, meter);
      if (problem) {
        throw new ApiError(
          409,
          `meter.groupBy must keep the properties plan "${planSlug}" prices groups by: ${problem}`,
          { code: "meter_groups_in_use" },
        );
      }
    }
    return meter;
  }

  async require(id: string): Promise<FeatureRow> {
    const feature = await findFeatureById(this.db, id);
    if (!feature) throw featureNotFound(id);
    return feature;
  }
}
