import { type Database, nowIso } from "@edge-platform/shared/db/client";
import type { PostalAddress } from "@edge-platform/shared/db/schema/billing";
import { ApiError } from "@edge-platform/shared/http/api-error";
import { type AuditContext, auditEntry, fieldChanges, SYSTEM_AUDIT } from "../audit/index.ts";
import { findTenantById } from "../platform/index.ts";
import {
  type BillingDetailsRow,
  findBillingDetails,
  upsertBillingDetails,
} from "./billing-details-storage.ts";
import { ppmToPercent } from "./domain/tax.ts";

export interface BillingDetailsInput {
  /** Millionths (the route turns the percentage into them). */
  taxRatePpm: number;
  taxId: string | null;
  legalName: string;
  address: PostalAddress;
}

export function billingDetailsView(row: BillingDetailsRow) {
  return {
    tenantId: row.tenantId,
    taxRate: ppmToPercent(row.taxRatePpm),
    taxId: row.taxId,
    legalName: row.legalName,
    address: row.address,
    createdAt: row.createdAt,
    updatedAt: row.updatedAt,
  };
}

const auditable = (row: BillingDetailsRow | BillingDetailsInput | undefined) =>
  row
    ? {
        taxRate: ppmToPercent(row.taxRatePpm),
        taxId: row.taxId,
        legalName: row.legalName,
        address: row.address,
      }
    : null;

/**
 * A tenant's billing details, set by platform administrators: the tax rate
 * that finalize copies onto each invoice, and the legal identity invoices
 * are addressed to.
 */
export class BillingDetailsService {
  constructor(
    private readonly db: Database,
    private readonly audit: AuditContext = SYSTEM_AUDIT,
  ) {}

  async get(tenantId: string) {
    await this.requireTenant(tenantId);
    const row = await findBillingDetails(this.db, tenantId);
    if (!row) throw new ApiError(404, "This tenant has no billing details yet");
    return billingDetailsView(row);
  }

  /** Replaces the details and writes the audit row (the changed fields) in the same batch. */
  async put(tenantId: string, input: BillingDetailsInput, now = new Date()) {
    await this.requireTenant(tenantId);
    const before = await findBillingDetails(this.db, tenantId);
    const [[row]] = await this.db.batch([
      upsertBillingDetails(
        this.db,
        {
          tenantId,
          taxRatePpm: input.taxRatePpm,
          taxId: input.taxId,
          legalName: input.legalName,
          address: input.address,
        },
        nowIso(),
      ),
      auditEntry(
        this.db,
        this.audit,
        {
          tenantId,
          action: "tenant.billing_details_updated",
          targetType: "tenant",
          targetId: tenantId,
          changes: fieldChanges(auditable(before), auditable(input)),
        },
        undefined,
        now,
      ),
    ]);
    if (!row) throw new Error("billing details upsert returned no row");
    return billingDetailsView(row);
  }

  private async requireTenant(tenantId: string) {
    const tenant = await findTenantById(this.db, tenantId);
    if (!tenant) throw new ApiError(404, `Tenant with ID "${tenantId}" not found`);
  }
}
