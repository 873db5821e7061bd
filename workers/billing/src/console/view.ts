import type { Context } from "hono";
import { ConsoleApi } from "./api-client.ts";
import type { ApiFetch } from "./api-fetch.ts";
import { type Html, type NavItem, shell } from "./layout.ts";
import { type ConsoleEnv, chooseTenant, endSession } from "./session.ts";

export type Role = "OWNER" | "ADMIN" | "DEVELOPER" | "BILLING";

/** Who is looking, at which tenant, with the API client acting as them. */
export interface ConsoleView {
  api: ConsoleApi;
  user: { id: string; email: string; isPlatformAdmin: boolean };
  tenants: { id: string; name: string; role: Role }[];
  tenantId: string | undefined;
  role: Role | undefined;
  csrfToken: string | undefined;
}

const ALL: Role[] = ["OWNER", "ADMIN", "DEVELOPER", "BILLING"];

/** The tenant screens, each shown to the roles its API routes serve. */
export const TENANT_SCREENS: (NavItem & { roles: Role[] })[] = [
  { href: "/console/overview", label: "Overview", roles: ALL },
  { href: "/console/usage", label: "Usage", roles: ALL },
  { href: "/console/invoices", label: "Invoices", roles: ["OWNER", "ADMIN", "BILLING"] },
  { href: "/console/credit-notes", label: "Credit notes", roles: ["OWNER", "ADMIN", "BILLING"] },
  { href: "/console/keys", label: "API keys", roles: ["OWNER", "ADMIN"] },
  { href: "/console/members", label: "Members", roles: ALL },
  { href: "/console/alerts", label: "Usage alerts", roles: ALL },
  { href: "/console/webhooks", label: "Webhooks", roles: ["OWNER", "ADMIN", "BILLING"] },
  { href: "/console/audit", label: "Audit log", roles: ["OWNER", "ADMIN"] },
];

export const OPERATOR_SCREENS: NavItem[] = [
  { href: "/console/admin/tenants", label: "Tenants" },
  { href: "/console/admin/catalog", label: "Catalog" },
  { href: "/console/admin/settlement", label: "Settlement" },
  { href: "/console/admin/dead-letters", label: "Dead letters" },
];

/**
 * The signed-in view, or a redirect to sign-in when there is no session
 * (or it has ended: expired, revoked, signed out elsewhere).
 */
export async function loadView(
  c: Context<ConsoleEnv>,
  fetchApi: ApiFetch,
): Promise<ConsoleView | Response> {
  const session = c.var.session;
  const toLogin = () => {
    endSession(c);
    const next = new URL(c.req.url);
    return c.redirect(
      `/console/login?next=${encodeURIComponent(next.pathname + next.search)}`,
      303,
    );
  };
  if (!session.refreshToken) return toLogin();
  const api = new ConsoleApi(c, fetchApi, session);
  const me = await api.get("/auth/me", { tenantId: null });
  if (me.status === 401) return toLogin();
  if (!me.ok) throw new Error(`auth/me answered ${me.status}`);
  const listed = await api.get("/tenants?limit=100", { tenantId: null });
  const tenants: ConsoleView["tenants"] = listed.ok
    ? listed.body.data.map((t: { id: string; name: string; role: Role }) => ({
        id: t.id,
        name: t.name,
        role: t.role,
      }))
    : [];
  let tenantId = session.tenantId;
  if (!tenants.some((t) => t.id === tenantId)) {
    tenantId = tenants[0]?.id;
    if (tenantId) chooseTenant(c, tenantId);
  }
  session.tenantId = tenantId;
  return {
    api,
    user: {
      id: me.body.id,
      email: me.body.email,
      isPlatformAdmin: me.body.isPlatformAdmin === true,
    },
    tenants,
    tenantId,
    role: tenants.find((t) => t.id === tenantId)?.role,
    csrfToken: session.csrfToken,
  };
}

/** Who reads the prepaid credit and buys more (`GET /credits`, `POST /credits/top-up`). */
export const CREDIT_ROLES: Role[] = ["OWNER", "ADMIN", "BILLING"];

/** Whether the view's role is one of `roles`: a screen's (by its href) or a section's. */
export function canSee(view: ConsoleView, what: string | Role[]): boolean {
  const roles =
    typeof what === "string" ? TENANT_SCREENS.find((s) => s.href === what)?.roles : what;
  if (!roles) return true;
  return view.role !== undefined && roles.includes(view.role);
}

const NOTICES: Record<string, string> = {
  "key-revoked": "The key is revoked: requests with it are refused from now on.",
  "alert-created": "The alert is saved. It fires once per reset window when usage reaches it.",
  "alert-deleted": "The alert is deleted.",
  "tenant-switched": "Switched tenant.",
  "webhook-deleted": "The endpoint is deleted.",
  "delivery-resent": "The delivery is queued again; it appears below once sent.",
  "example-sent": "A webhook.test event is queued for this endpoint; it appears below once sent.",
  "member-added": "The member is added.",
  "role-changed": "The member's role is changed.",
  "feature-created": "The feature is created.",
  "plan-created": "The plan is created.",
  "price-created": "The price is added.",
  "entitlement-created": "The feature is granted to the plan.",
  "invoice-generated": "A draft invoice is generated.",
  "invoice-finalized": "The invoice is finalized: it has its number and is open for payment.",
  "invoice-voided": "The invoice is void.",
  "invoice-paid": "The invoice is marked paid.",
  "invoice-reissued": "A replacement draft is generated for the void invoice's period.",
  "credit-note-issued":
    "The credit note is issued: it is listed below, and the tenant sees it under Credit notes.",
  "dead-letter-retried": "The message is sent again.",
  "dead-letter-discarded": "The message is discarded.",
  "webhook-updated": "The endpoint is updated.",
  "credit-bought":
    "The top-up is invoiced. Its credit is PENDING until the TOP_UP invoice is paid, then it joins the balance.",
};

export interface RenderOptions {
  title: string;
  current: string;
  body: Html;
  error?: string | undefined;
  status?: number;
}

export function render(c: Context<ConsoleEnv>, view: ConsoleView, options: RenderOptions) {
  const noticeCode = c.req.query("notice");
  const page = shell(
    {
      title: options.title,
      current: options.current,
      csrfToken: view.csrfToken,
      user: view.user,
      tenants: view.tenants,
      tenantId: view.tenantId,
      tenantNav: view.tenantId ? TENANT_SCREENS.filter((s) => canSee(view, s.href)) : [],
      operatorNav: view.user.isPlatformAdmin ? OPERATOR_SCREENS : [],
      notice: noticeCode ? NOTICES[noticeCode] : undefined,
      error: options.error,
    },
    options.body,
  );
  return c.html(page, (options.status ?? 200) as 200);
}

/** Back to a page after a write, with what happened (Post/Redirect/Get). */
export function done(c: Context<ConsoleEnv>, path: string, notice: string): Response {
  const separator = path.includes("?") ? "&" : "?";
  return c.redirect(`${path}${separator}notice=${notice}`, 303);
}

export async function formOf(c: Context<ConsoleEnv>): Promise<Record<string, string>> {
  // Always parsed with `all`: the request caches the first parse, whatever its options.
  const body = await c.req.parseBody({ all: true });
  const fields: Record<string, string> = {};
  for (const [name, value] of Object.entries(body)) {
    const first = Array.isArray(value) ? value[0] : value;
    if (typeof first === "string") fields[name] = first;
  }
  return fields;
}

/** Every value of a repeated field (checkboxes). */
export async function formValues(c: Context<ConsoleEnv>, name: string): Promise<string[]> {
  const body = await c.req.parseBody({ all: true });
  const value = body[name];
  if (value === undefined) return [];
  return (Array.isArray(value) ? value : [value]).filter((v): v is string => typeof v === "string");
}
