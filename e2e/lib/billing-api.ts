import { expect, inject } from "vitest";
import { devVarsFile, readDevVars } from "../../scripts/lib/dev-vars.ts";
import { ROOT } from "../../scripts/lib/wrangler.ts";

export interface Sent {
  status: number;
  // biome-ignore lint/suspicious/noExplicitAny: JSON bodies are asserted field by field
  body: any;
  headers: Headers;
}

export interface SendOptions {
  method?: string;
  /** Sent as JSON. */
  body?: unknown;
  /** Sent as is, with a JSON content type (e.g. a body a signature covers). */
  raw?: string;
  /** Bearer credential: an access token or an API key. */
  token?: string;
  /** The x-tenant-id header. */
  tenant?: string;
  headers?: Record<string, string>;
}

/** Base URL of the running stack's billing API (/api/v1). */
export function billingApiUrl(): string {
  return `${inject("stack").billingUrl}/api/v1`;
}

/** One call to the running stack's billing API, as a client would make it. */
export function send(path: string, options: SendOptions = {}): Promise<Sent> {
  return sendTo(billingApiUrl(), path, options);
}

/** `send` against another stack's billing API (`<billing url>/api/v1`), e.g. a private one. */
export async function sendTo(
  apiUrl: string,
  path: string,
  options: SendOptions = {},
): Promise<Sent> {
  const headers: Record<string, string> = { ...options.headers };
  const body =
    options.raw ?? (options.body !== undefined ? JSON.stringify(options.body) : undefined);
  if (body !== undefined) headers["content-type"] = "application/json";
  if (options.token) headers.authorization = `Bearer ${options.token}`;
  if (options.tenant) headers["x-tenant-id"] = options.tenant;
  const response = await fetch(`${apiUrl}${path}`, {
    method: options.method ?? (body === undefined ? "GET" : "POST"),
    headers,
    ...(body !== undefined ? { body } : {}),
  });
  return { status: response.status, body: await response.json(), headers: response.headers };
}

/** The billing worker's development values, as `npm run dev` uses them. */
export function devVars(): Record<string, string> {
  return readDevVars(devVarsFile(ROOT));
}

/** The local platform administrator that `npm run dev` seeds. */
export function devAdminCredentials(): { email: string; password: string } {
  const vars = devVars();
  return { email: vars.DEV_ADMIN_EMAIL ?? "", password: vars.DEV_ADMIN_PASSWORD ?? "" };
}

/**
 * The body of a response that has the expected status; otherwise the test
 * fails with `what` and the response body.
 */
export function ok(result: Sent, status: number, what: string) {
  expect(result.status, `${what}: ${JSON.stringify(result.body)}`).toBe(status);
  return result.body;
}

/** Who makes a call: its bearer credential, the tenant it acts on, and which stack. */
export interface Caller {
  /** An access token or an API key. */
  token: string;
  /** The x-tenant-id header (a platform administrator acting on a tenant). */
  tenantId?: string;
  /** The billing API to call (`<billing url>/api/v1`); the shared stack's by default. */
  apiUrl?: string;
}

function sendAs(caller: Caller, path: string, body: unknown): Promise<Sent> {
  return sendTo(caller.apiUrl ?? billingApiUrl(), path, {
    token: caller.token,
    ...(caller.tenantId ? { tenant: caller.tenantId } : {}),
    body,
  });
}

/** POST `body` to `path` as `caller`; the created resource (status 201). */
async function create(caller: Caller, path: string, body: unknown) {
  return ok(await sendAs(caller, path, body), 201, `POST ${path}`);
}

/** Signs in the administrator `npm run dev` seeds; its access token. */
export async function loginDevAdmin(apiUrl = billingApiUrl()): Promise<string> {
  const cached = adminTokens.get(apiUrl);
  if (cached && Date.now() - cached.at < ADMIN_TOKEN_REUSE_MS) return cached.token;
  const login = await waitingOutRateLimit(() =>
    sendTo(apiUrl, "/auth/login", { body: devAdminCredentials() }),
  );
  const token = ok(login, 200, "POST /auth/login").accessToken as string;
  adminTokens.set(apiUrl, { token, at: Date.now() });
  return token;
}

// A test file reuses the administrator's access token (valid 15 minutes)
// rather than signing in again each time: sign-ins are 10 a minute.
const ADMIN_TOKEN_REUSE_MS = 5 * 60_000;
const adminTokens = new Map<string, { token: string; at: number }>();

/**
 * Sign-ins and sign-ups are limited per client address, and every suite on
 * the shared stack comes from the same one: a 429 is waited out (at most
 * three times) as its message says.
 */
async function waitingOutRateLimit(send: () => ReturnType<typeof sendTo>) {
  let result = await send();
  for (let tries = 0; result.status === 429 && tries < 3; tries++) {
    const seconds = Number(/Retry after (\d+)/.exec(String(result.body.message))?.[1] ?? 10);
    await new Promise((resolve) => setTimeout(resolve, (seconds + 1) * 1000));
    result = await send();
  }
  return result;
}

/** POST /auth/register: a new user owning a new tenant; the response body (5 sign-ups a minute per address). */
export async function registerTenantOwner(account: Record<string, unknown>, apiUrl?: string) {
  const result = await waitingOutRateLimit(() =>
    sendTo(apiUrl ?? billingApiUrl(), "/auth/register", { body: account }),
  );
  return ok(result, 201, "POST /auth/register");
}

/** POST /tenants as a platform administrator: the new tenant. */
export function createTenant(admin: Caller, name: string) {
  return create(admin, "/tenants", { name });
}

/** POST /features: the new catalog feature. */
export function createFeature(
  admin: Caller,
  feature: { name: string; lookupKey: string; type: string; unit?: string },
) {
  return create(admin, "/features", feature);
}

/** POST /plans, then POST /plans/:id/prices: the new plan and its price. */
export async function createPlanWithPrice(
  admin: Caller,
  plan: { name: string; slug: string },
  price: { interval: string; amount: number; currency?: string; trialDays?: number },
) {
  const created = await create(admin, "/plans", plan);
  return { plan: created, price: await create(admin, `/plans/${created.id}/prices`, price) };
}

/** POST /plans/:id/entitlements: the plan grants the feature on these terms. */
export function grantEntitlement(
  admin: Caller,
  planId: string,
  featureId: string,
  terms: Record<string, unknown>,
) {
  return create(admin, `/plans/${planId}/entitlements`, { featureId, ...terms });
}

/** POST /subscriptions as (or on behalf of) a tenant: the new subscription. */
export function subscribe(customer: Caller, to: { planId: string; priceId: string }) {
  return create(customer, "/subscriptions", { planId: to.planId, priceId: to.priceId });
}

/** POST /api-keys for the tenant: the key's secret, shown once. */
export async function createApiKey(customer: Caller, name: string): Promise<string> {
  return (await create(customer, "/api-keys", { name })).key as string;
}
