/**
 * Loads the local demo data into the billing database. Every statement is
 * an upsert that leaves existing rows alone, so running it on every
 * `npm run dev` is safe and keeps whatever a developer changed.
 */
import { hashPassword } from "../workers/billing/src/platform/domain/password.ts";
import { demoCatalogSql } from "./demo-catalog.ts";
import { devVarsFile, readDevVars } from "./lib/dev-vars.ts";
import { executeLocalSql, ROOT } from "./lib/wrangler.ts";

// Fixed ids keep the demo rows stable across runs and machines.
/** The demo tenant (Acme Analytics): a fixed id, so settings per tenant can name it before it exists. */
export const DEMO_TENANT_ID = "00000000-0000-4000-8000-00000000a001";
const DEV_ADMIN_ID = "00000000-0000-4000-8000-00000000b001";
const DEV_ADMIN_MEMBERSHIP_ID = "00000000-0000-4000-8000-00000000c001";

const sqlText = (value: string) => `'${value.replaceAll("'", "''")}'`;

export async function demoDataSql(vars: Record<string, string>): Promise<string> {
  const email = (vars.DEV_ADMIN_EMAIL ?? "admin@example.dev").trim().toLowerCase();
  const password = vars.DEV_ADMIN_PASSWORD;
  if (!password) throw new Error("DEV_ADMIN_PASSWORD is not set in the dev vars file");
  const passwordHash = await hashPassword(password);
  return [
    `INSERT INTO users (id, email, password_hash, first_name, last_name, is_active, is_platform_admin)
     VALUES (${sqlText(DEV_ADMIN_ID)}, ${sqlText(email)}, ${sqlText(passwordHash)}, 'Dev', 'Admin', 1, 1)
     ON CONFLICT (email) DO NOTHING;`,
    `INSERT INTO tenants (id, name, slug, status)
     VALUES (${sqlText(DEMO_TENANT_ID)}, 'Acme Analytics', 'acme', 'ACTIVE')
     ON CONFLICT (slug) DO NOTHING;`,
    `INSERT INTO memberships (id, user_id, tenant_id, role)
     SELECT ${sqlText(DEV_ADMIN_MEMBERSHIP_ID)}, u.id, t.id, 'OWNER'
     FROM users u, tenants t WHERE u.email = ${sqlText(email)} AND t.slug = 'acme'
     ON CONFLICT (user_id, tenant_id) DO NOTHING;`,
    ...demoCatalogSql("acme"),
  ].join("\n");
}

export async function loadDemoData(persistTo: string): Promise<void> {
  executeLocalSql("wrangler.toml", persistTo, await demoDataSql(readDevVars(devVarsFile(ROOT))));
}
