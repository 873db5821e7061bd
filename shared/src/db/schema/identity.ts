import { sql } from "drizzle-orm";
import { index, integer, sqliteTable, text, uniqueIndex } from "drizzle-orm/sqlite-core";

// Conventions: ids are UUID v4 text minted by the application; times are
// ISO-8601 UTC text with milliseconds (sortable, and what the API returns).
const timestamps = {
  createdAt: text("created_at").notNull().default(sql`(strftime('%Y-%m-%dT%H:%M:%fZ', 'now'))`),
  updatedAt: text("updated_at").notNull().default(sql`(strftime('%Y-%m-%dT%H:%M:%fZ', 'now'))`),
};

export const tenantStatuses = ["ACTIVE", "SUSPENDED", "CANCELLED"] as const;
export const membershipRoles = ["OWNER", "ADMIN", "DEVELOPER", "BILLING"] as const;

export const tenants = sqliteTable("tenants", {
  id: text("id").primaryKey(),
  name: text("name").notNull(),
  slug: text("slug").notNull().unique("tenants_slug_unique"),
  status: text("status", { enum: tenantStatuses }).notNull().default("ACTIVE"),
  metadata: text("metadata", { mode: "json" })
    .$type<Record<string, unknown>>()
    .notNull()
    .default(sql`'{}'`),
  ...timestamps,
});

export const users = sqliteTable("users", {
  id: text("id").primaryKey(),
  email: text("email").notNull().unique("users_email_unique"),
  /** `pbkdf2-sha256$<iterations>$<salt b64>$<hash b64>`: the policy travels with the hash. */
  passwordHash: text("password_hash").notNull(),
  firstName: text("first_name").notNull(),
  lastName: text("last_name").notNull(),
  isActive: integer("is_active", { mode: "boolean" }).notNull().default(true),
  isPlatformAdmin: integer("is_platform_admin", { mode: "boolean" }).notNull().default(false),
  /**
   * Bumped whenever every session of the user must end (logout-all, password
   * change or reset, refresh-token reuse); access tokens carry the value they
   * were issued under, so older ones stop working before they expire.
   */
  tokenVersion: integer("token_version").notNull().default(0),
  ...timestamps,
});

export const memberships = sqliteTable(
  "memberships",
  {
    id: text("id").primaryKey(),
    userId: text("user_id")
      .notNull()
      .references(() => users.id, { onDelete: "cascade" }),
    tenantId: text("tenant_id")
      .notNull()
      .references(() => tenants.id, { onDelete: "cascade" }),
    role: text("role", { enum: membershipRoles }).notNull().default("DEVELOPER"),
    ...timestamps,
  },
  (table) => [
    uniqueIndex("memberships_user_tenant_unique").on(table.userId, table.tenantId),
    index("memberships_tenant_idx").on(table.tenantId),
  ],
);

export const apiKeyStatuses = ["ACTIVE", "REVOKED", "EXPIRED"] as const;

/**
 * Refresh tokens are opaque strings; only their SHA-256 hex is kept.
 * `revokedAt` set means the token was rotated, logged out or killed by reuse
 * detection; presenting it again is a reuse (honoured only within the grace
 * period after a rotation). `familyId` is the id of the sign-in's first
 * token, shared by every token rotated from it: a reuse ends that family.
 */
export const refreshTokens = sqliteTable(
  "refresh_tokens",
  {
    id: text("id").primaryKey(),
    userId: text("user_id")
      .notNull()
      .references(() => users.id, { onDelete: "cascade" }),
    tokenHash: text("token_hash").notNull().unique("refresh_tokens_token_hash_unique"),
    expiresAt: text("expires_at").notNull(),
    revokedAt: text("revoked_at"),
    createdAt: timestamps.createdAt,
    /** Null only for rows the migration that added it had no value for (it sets their own id). */
    familyId: text("family_id"),
  },
  (table) => [
    index("refresh_tokens_user_idx").on(table.userId),
    index("refresh_tokens_family_idx").on(table.familyId),
  ],
);

/** Single-use password-reset tokens, stored as SHA-256 hex. */
export const passwordResetTokens = sqliteTable(
  "password_reset_tokens",
  {
    id: text("id").primaryKey(),
    userId: text("user_id")
      .notNull()
      .references(() => users.id, { onDelete: "cascade" }),
    tokenHash: text("token_hash").notNull().unique("password_reset_tokens_token_hash_unique"),
    expiresAt: text("expires_at").notNull(),
    usedAt: text("used_at"),
    createdAt: timestamps.createdAt,
  },
  (table) => [index("password_reset_tokens_user_idx").on(table.userId)],
);

/**
 * Tenant API keys. The raw key is shown once at creation; only its first
 * characters (for recognising it in lists) and its SHA-256 hex are stored.
 */
export const apiKeys = sqliteTable(
  "api_keys",
  {
    id: text("id").primaryKey(),
    tenantId: text("tenant_id")
      .notNull()
      .references(() => tenants.id, { onDelete: "cascade" }),
    createdByUserId: text("created_by_user_id")
      .notNull()
      .references(() => users.id, { onDelete: "restrict" }),
    keyPrefix: text("key_prefix").notNull(),
    keyHash: text("key_hash").notNull().unique("api_keys_key_hash_unique"),
    name: text("name").notNull(),
    status: text("status", { enum: apiKeyStatuses }).notNull().default("ACTIVE"),
    expiresAt: text("expires_at"),
    lastUsedAt: text("last_used_at"),
    revokedAt: text("revoked_at"),
    createdAt: timestamps.createdAt,
  },
  (table) => [index("api_keys_tenant_idx").on(table.tenantId)],
);
