import type { Database } from "@edge-platform/shared/db/client";
import { ApiError } from "@edge-platform/shared/http/api-error";
import type { TenantContext } from "../app-env.ts";
import {
  type ApiKeyRow,
  findApiKeyInTenant,
  insertApiKey,
  listApiKeys,
  revokeApiKey,
} from "../db/api-keys.ts";
import type { UserRow } from "../db/users.ts";
import { generateApiKey } from "../domain/api-key.ts";
import { type PageRequest, pageMeta, pageOffset } from "../domain/pagination.ts";
import { apiKeyView } from "./views.ts";

const DAY_MS = 86_400_000;

export class ApiKeyService {
  constructor(private readonly db: Database) {}

  /** The raw key is in this response and nowhere else, ever. */
  async create(
    context: TenantContext,
    creator: UserRow,
    input: { name: string; expiresInDays?: number | undefined },
  ) {
    const generated = await generateApiKey();
    const now = new Date();
    const row = await insertApiKey(this.db, {
      id: crypto.randomUUID(),
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
    });
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
    const revoked = await revokeApiKey(this.db, context.tenant.id, id);
    if (revoked) return apiKeyView(revoked);
    const existing = await findApiKeyInTenant(this.db, context.tenant.id, id);
    if (!existing) throw new ApiError(404, `API key with ID "${id}" not found`);
    throw new ApiError(409, "API key is already revoked");
  }

  describe(key: ApiKeyRow) {
    return { ...apiKeyView(key), tenantId: key.tenantId };
  }
}
