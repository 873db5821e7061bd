import type { Database } from "@edge-platform/shared/db/client";
import { ApiError } from "@edge-platform/shared/http/api-error";
import { type AuditContext, auditEntry, ROW_CHANGED, SYSTEM_AUDIT } from "../audit/index.ts";
import type { ApiKeyRow, TenantContext, UserRow } from "../platform/index.ts";
import {
  type ApiKeyVerifier,
  generateApiKey,
  isolateApiKeys,
  type PageRequest,
  pageMeta,
  pageOffset,
} from "../platform/index.ts";
import { findApiKeyInTenant, insertApiKey, listApiKeys, revokeApiKey } from "./api-key-storage.ts";
import { apiKeyView } from "./views.ts";

const DAY_MS = 86_400_000;

export class ApiKeyService {
  constructor(
    private readonly db: Database,
    private readonly audit: AuditContext = SYSTEM_AUDIT,
    private readonly verifier: ApiKeyVerifier = isolateApiKeys,
  ) {}

  /** The raw key is in this response and nowhere else, ever. */
  async create(
    context: TenantContext,
    creator: UserRow,
    input: { name: string; expiresInDays?: number | undefined },
  ) {
    const generated = await generateApiKey();
    const now = new Date();
    const id = crypto.randomUUID();
    const [[row]] = await this.db.batch([
      insertApiKey(this.db, {
        id,
        tenantId: context.tenant.id,
        createdByUserId: creator.id,
        keyPrefix: generated.prefix,
        keyHash: generated.hash,
        name: input.name,
        expiresAt:
          input.expiresInDays === undefined
            ? null
            : new Date(now.getTime() + input.expiresInDays * DAY_MS).toISOString(),
        createdAt: now.toISOString(),
      }),
      auditEntry(this.db, this.audit, {
        tenantId: context.tenant.id,
        action: "api_key.created",
        targetType: "api_key",
        targetId: id,
        changes: {
          name: { after: input.name },
          prefix: { after: generated.prefix },
          expiresInDays: { after: input.expiresInDays ?? null },
        },
      }),
    ]);
    if (!row) throw new Error("API key insert returned no row");
    return {
      id: row.id,
      name: row.name,
      key: generated.key,
      prefix: row.keyPrefix,
      status: row.status,
      expiresAt: row.expiresAt,
      createdAt: row.createdAt,
    };
  }

  async list(context: TenantContext, page: PageRequest) {
    const { rows, total } = await listApiKeys(
      this.db,
      context.tenant.id,
      pageOffset(page),
      page.limit,
    );
    const now = new Date();
    return { data: rows.map((row) => apiKeyView(row, now)), meta: pageMeta(page, total) };
  }

  /** Permanent: a revoked key stays revoked, and revoking it again is a 409. */
  async revoke(context: TenantContext, id: string) {
    const [[revoked]] = await this.db.batch([
      revokeApiKey(this.db, context.tenant.id, id),
      auditEntry(
        this.db,
        this.audit,
        {
          tenantId: context.tenant.id,
          action: "api_key.revoked",
          targetType: "api_key",
          targetId: id,
          changes: { status: { after: "REVOKED" } },
        },
        ROW_CHANGED,
      ),
    ]);
    if (revoked) {
      // This isolate and this data center stop accepting it now; every other
      // isolate within API_KEY_CACHE_BOUND_MS.
      await this.verifier.forgetKeys([revoked.keyHash]);
      return apiKeyView(revoked);
    }
    const existing = await findApiKeyInTenant(this.db, context.tenant.id, id);
    if (!existing) throw new ApiError(404, `API key with ID "${id}" not found`);
    throw new ApiError(409, "API key is already revoked");
  }

  describe(key: ApiKeyRow) {
    return { ...apiKeyView(key), tenantId: key.tenantId };
  }
}
