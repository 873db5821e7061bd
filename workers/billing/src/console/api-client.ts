import type { Context } from "hono";
import { API_PREFIX } from "../platform/index.ts";
import type { ApiFetch } from "./api-fetch.ts";
import type { ConsoleEnv, ConsoleSession } from "./session.ts";

export interface ApiResult<T = ApiBody> {
  status: number;
  ok: boolean;
  body: T;
  headers: Headers;
}

/** Response bodies are read field by field by the pages. */
// biome-ignore lint/suspicious/noExplicitAny: JSON from the console's own API
export type ApiBody = any;

export interface CallOptions {
  body?: unknown;
  /** x-tenant-id; the session's tenant unless given (null: none). */
  tenantId?: string | null;
  /** For POST and PUT: the form's Idempotency-Key. */
  idempotencyKey?: string | undefined;
}

/** The words of an API error, for the page (never the raw JSON). */
export function errorText(result: ApiResult): string {
  const message = result.body?.message;
  if (Array.isArray(message)) return message.join("; ");
  if (typeof message === "string" && message) return message;
  return `The request failed (HTTP ${result.status}).`;
}

/**
 * Calls the API in-process as the signed-in user: the session's access
 * token, refreshed once with the refresh token when it has expired (the
 * new pair then goes back into the session's cookies).
 */
export class ConsoleApi {
  constructor(
    private readonly c: Context<ConsoleEnv>,
    private readonly fetchApi: ApiFetch,
    private readonly session: ConsoleSession,
  ) {}

  get<T = ApiBody>(path: string, options: CallOptions = {}) {
    return this.call<T>("GET", path, options);
  }

  post<T = ApiBody>(path: string, options: CallOptions = {}) {
    return this.call<T>("POST", path, options);
  }

  async call<T = ApiBody>(
    method: string,
    path: string,
    options: CallOptions = {},
  ): Promise<ApiResult<T>> {
    let result = await this.send<T>(method, path, options);
    if (result.status === 401 && (await this.session.refresh())) {
      result = await this.send<T>(method, path, options);
    }
    return result;
  }

  /** The raw response (a PDF, for one). */
  async raw(path: string, options: CallOptions = {}): Promise<Response> {
    let response = await this.fetchApi(
      this.request("GET", path, options),
      this.c.env,
      this.c.executionCtx,
    );
    if (response.status === 401 && (await this.session.refresh())) {
      response = await this.fetchApi(
        this.request("GET", path, options),
        this.c.env,
        this.c.executionCtx,
      );
    }
    return response;
  }

  private request(method: string, path: string, options: CallOptions): Request {
    const headers = new Headers();
    if (this.session.accessToken)
      headers.set("authorization", `Bearer ${this.session.accessToken}`);
    const tenantId = options.tenantId === undefined ? this.session.tenantId : options.tenantId;
    if (tenantId) headers.set("x-tenant-id", tenantId);
    if (options.idempotencyKey && (method === "POST" || method === "PUT")) {
      headers.set("idempotency-key", options.idempotencyKey);
    }
    // The audit trail and rate limits see the browser, not the console.
    for (const name of ["cf-connecting-ip", "user-agent", "x-forwarded-for"]) {
      const value = this.c.req.header(name);
      if (value) headers.set(name, value);
    }
    headers.set("x-correlation-id", this.c.get("correlationId"));
    let body: string | undefined;
    if (options.body !== undefined) {
      body = JSON.stringify(options.body);
      headers.set("content-type", "application/json");
    }
    const origin = new URL(this.c.req.url).origin;
    return new Request(`${origin}${API_PREFIX}${path}`, { method, headers, body: body ?? null });
  }

  private async send<T>(method: string, path: string, options: CallOptions): Promise<ApiResult<T>> {
    const response = await this.fetchApi(
      this.request(method, path, options),
      this.c.env,
      this.c.executionCtx,
    );
    const text = await response.text();
    let body: unknown = null;
    try {
      body = text ? JSON.parse(text) : null;
    } catch {
      body = { message: "The API answered with something that is not JSON." };
    }
    return { status: response.status, ok: response.ok, body: body as T, headers: response.headers };
  }
}
