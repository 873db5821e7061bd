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
