import { env, exports } from "cloudflare:workers";
import { expect } from "vitest";

export const UUID_V4 = /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;
export const PASSWORD = "Sup3rSecret";

let counter = 0;
/** Unique per call: tests share one database, so every test makes its own people and tenants. */
export function unique(label: string): string {
  counter += 1;
  return `${label}-${Date.now().toString(36)}-${counter}-${Math.random().toString(36).slice(2, 8)}`;
}
export const uniqueEmail = () => `${unique("user")}@example.com`;
export const uniqueSlug = () => unique("t").toLowerCase();
/** A fresh client address, so rate limits of one test never reach another. */
export const uniqueIp = () =>
  `10.${Math.floor(Math.random() * 250)}.${Math.floor(Math.random() * 250)}.${(counter++ % 250) + 1}`;

export interface CallOptions {
  method?: string;
  body?: unknown;
  rawBody?: string;
  token?: string;
  tenant?: string;
  ip?: string;
  headers?: Record<string, string>;
}

/** Response bodies are asserted field by field, so tests read them untyped. */
// biome-ignore lint/suspicious/noExplicitAny: test-side JSON bodies
export type Json = any;

export interface CallResult<T = Json> {
  status: number;
  body: T;
  headers: Headers;
}

export function request(path: string, options: CallOptions = {}): Request {
  const headers: Record<string, string> = {
    "cf-connecting-ip": options.ip ?? uniqueIp(),
    ...options.headers,
  };
  if (options.token) headers.authorization = `Bearer ${options.token}`;
  if (options.tenant) headers["x-tenant-id"] = options.tenant;
  let body: string | undefined;
  if (options.rawBody !== undefined) body = options.rawBody;
  else if (options.body !== undefined) body = JSON.stringify(options.body);
  if (body !== undefined && !headers["content-type"]) headers["content-type"] = "application/json";
  return new Request(`http://billing${path}`, {
    method: options.method ?? (body === undefined ? "GET" : "POST"),
    headers,
    ...(body !== undefined ? { body } : {}),
  });
}

export async function readResult<T = Json>(response: Response): Promise<CallResult<T>> {
  const text = await response.text();
  let body: unknown = text;
  try {
    body = JSON.parse(text);
  } catch {
    // Not JSON: keep the text for the assertion message.
  }
  return { status: response.status, body: body as T, headers: response.headers };
}

/** One HTTP call through the worker's own fetch handler. */
export async function call<T = Json>(
  path: string,
  options: CallOptions = {},
): Promise<CallResult<T>> {
  return readResult<T>(await exports.default.fetch(request(path, options)));
}

/** Asserts the billing error shape, and the message when given. */
export function expectError(
  result: CallResult,
  status: number,
  message?: string | RegExp | ((message: string | string[]) => void),
) {
  expect(result.status, JSON.stringify(result.body)).toBe(status);
  expect(result.body).toEqual({
    statusCode: status,
    message: expect.anything(),
    error: expect.any(String),
    correlationId: expect.stringMatching(UUID_V4),
    timestamp: expect.any(String),
    path: expect.any(String),
  });
  if (typeof message === "string") expect(result.body.message).toBe(message);
  else if (message instanceof RegExp) expect(String(result.body.message)).toMatch(message);
  else if (message) message(result.body.message);
}

export interface Account {
  email: string;
  password: string;
  accessToken: string;
  refreshToken: string;
  user: { id: string; email: string; firstName: string; lastName: string };
  tenant: { id: string; name: string; slug: string };
}

export async function register(overrides: Record<string, unknown> = {}): Promise<Account> {
  const body = {
    email: uniqueEmail(),
    password: PASSWORD,
    firstName: "Ada",
    lastName: "Lovelace",
    tenantName: "Analytical Engines",
    tenantSlug: uniqueSlug(),
    ...overrides,
  };
  const result = await call("/api/v1/auth/register", { body });
  expect(result.status, JSON.stringify(result.body)).toBe(201);
  return { email: result.body.user.email, password: String(body.password), ...result.body };
}

export async function login(email: string, password = PASSWORD) {
  const result = await call("/api/v1/auth/login", { body: { email, password } });
  expect(result.status, JSON.stringify(result.body)).toBe(200);
  return result.body as { accessToken: string; refreshToken: string; user: Account["user"] };
}

/** Adds a user with `role` to the owner's tenant through POST /users and signs them in. */
export async function addMember(owner: Account, role: "ADMIN" | "DEVELOPER" | "BILLING") {
  const email = uniqueEmail();
  const created = await call("/api/v1/users", {
    token: owner.accessToken,
    tenant: owner.tenant.id,
    body: { email, password: PASSWORD, firstName: "Member", lastName: role, role },
  });
  expect(created.status, JSON.stringify(created.body)).toBe(201);
  const session = await login(email);
  return { email, id: created.body.id as string, accessToken: session.accessToken };
}

export function db(): D1Database {
  return env.DB;
}
