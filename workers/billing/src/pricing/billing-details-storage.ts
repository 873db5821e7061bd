import type { Database } from "@edge-platform/shared/db/client";
import { tenantBillingDetails } from "@edge-platform/shared/db/schema/billing";
import { eq } from "drizzle-orm";

export type BillingDetailsRow = typeof tenantBillingDetails.$inferSelect;
export type BillingDetailsValues = Omit<BillingDetailsRow, "createdAt" | "updatedAt">;

export function findBillingDetails(db: Database, tenantId: string) {
  return db
    .select()
    .from(tenantBillingDetails)
    .where(eq(tenantBillingDetails.tenantId, tenantId))
    .get();
}

/** Inserts or replaces a tenant's billing details (PUT semantics: every field is written). */
export function upsertBillingDetails(db: Database, values: BillingDetailsValues, now: string) {
  const { tenantId, ...fields } = values;
  return db
    .insert(tenantBillingDetails)
    .values({ ...values, createdAt: now, updatedAt: now })
    .onConflictDoUpdate({
      target: tenantBillingDetails.tenantId,
      set: { ...fields, updatedAt: now },
    })
    .returning();
}
