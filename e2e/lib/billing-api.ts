import { inject } from "vitest";
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
