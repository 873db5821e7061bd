import { createExecutionContext, waitOnExecutionContext } from "cloudflare:test";
import { env, exports } from "cloudflare:workers";
import worker from "../src/index.ts";

export const TOKEN = "test-portfolio-token";

let ipCounter = 0;
/** A distinct client address per call, so tests do not share rate-limit windows by accident. */
export function freshIp(): string {
  ipCounter += 1;
  return `10.${(ipCounter >> 16) & 255}.${(ipCounter >> 8) & 255}.${ipCounter & 255}`;
}

/**
 * Sends a request through the worker's fetch handler: the deployed default
 * export, or, with `overrides`, the same handler with some bindings or vars
 * replaced (production providers, a fake CMS, other limits).
 */
export async function call(
  path: string,
  init: RequestInit = {},
  overrides?: Record<string, unknown>,
): Promise<Response> {
  const headers = new Headers(init.headers);
  if (!headers.has("CF-Connecting-IP")) headers.set("CF-Connecting-IP", freshIp());
  const request = new Request(`http://portfolio.test${path}`, { ...init, headers });
  if (!overrides) return exports.default.fetch(request);
  const ctx = createExecutionContext();
  const response = await worker.fetch(
    request as Request<unknown, IncomingRequestCfProperties>,
    { ...env, ...overrides } as Env,
    ctx,
  );
  await waitOnExecutionContext(ctx);
  return response;
}

export interface ChatOptions {
  token?: string | null;
  ip?: string;
  overrides?: Record<string, unknown>;
}

export function chat(body: unknown, options: ChatOptions = {}): Promise<Response> {
  const headers: Record<string, string> = { "Content-Type": "application/json" };
  const token = options.token === undefined ? TOKEN : options.token;
  if (token !== null) headers.Authorization = `Bearer ${token}`;
  if (options.ip) headers["CF-Connecting-IP"] = options.ip;
  return call(
    "/v1/chat",
    { method: "POST", headers, body: typeof body === "string" ? body : JSON.stringify(body) },
    options.overrides,
  );
}

export interface DoneEvent {
  type: "done";
  content: string;
  cached: boolean;
  latency_ms: number;
  sources: { id: string; type: string; title: string }[];
}

export interface StreamedAnswer {
  raw: string;
  events: ({ type: "token"; content: string } | DoneEvent)[];
  text: string;
  done: DoneEvent;
}

/** Parses an SSE body strictly: only `data: <json>\n\n` events are allowed. */
export async function readSse(response: Response): Promise<StreamedAnswer> {
  const raw = await response.text();
  const parts = raw.split("\n\n");
  if (parts.pop() !== "")
    throw new Error(`stream does not end with a blank line: ${JSON.stringify(raw.slice(-40))}`);
  const events = parts.map((part) => {
    if (!part.startsWith("data: ") || part.includes("\n"))
      throw new Error(`not a single-line data event: ${JSON.stringify(part)}`);
    return JSON.parse(part.slice(6)) as StreamedAnswer["events"][number];
  });
  const done = events[events.length - 1];
  if (done?.type !== "done") throw new Error("the stream does not end with a done event");
  return {
    raw,
    events,
    text: events.map((event) => (event.type === "token" ? event.content : "")).join(""),
    done,
  };
}

/** Asks in a fresh session unless `extra.session_id` says otherwise. */
export async function ask(
  question: string,
  extra: Record<string, unknown> = {},
  options: ChatOptions = {},
) {
  const response = await chat({ question, session_id: crypto.randomUUID(), ...extra }, options);
  if (response.status !== 200)
    throw new Error(`chat answered ${response.status}: ${await response.text()}`);
  return readSse(response);
}

export async function metrics(overrides?: Record<string, unknown>) {
  const response = await call(
    "/v1/chat/safety-metrics",
    { headers: { Authorization: `Bearer ${TOKEN}` } },
    overrides,
  );
  return (await response.json()) as {
    started_at: string;
    uptime_seconds: number;
    totals: Record<string, number>;
    response_routes: Record<string, number>;
    pre_router_categories: Record<string, number>;
    pre_router_reasons: Record<string, number>;
    retrieval_gate_reasons: Record<string, number>;
    fallback_reasons: Record<string, number>;
  };
}

export async function errorOf(response: Response) {
  const body = (await response.json()) as {
    error: { code: number; type: string; message: string; request_id: string };
  };
  return body.error;
}

type Snapshot = Awaited<ReturnType<typeof metrics>>;
type CounterGroup = Exclude<keyof Snapshot, "started_at" | "uptime_seconds">;

/**
 * Counter changes since `before` (storage outlives a single test, and the
 * counters are global by design), non-zero entries only.
 */
export function delta(
  before: Snapshot,
  after: Snapshot,
): Record<CounterGroup, Record<string, number>> {
  const groups: CounterGroup[] = [
    "totals",
    "response_routes",
    "pre_router_categories",
    "pre_router_reasons",
    "retrieval_gate_reasons",
    "fallback_reasons",
  ];
  return Object.fromEntries(
    groups.map((group) => [
      group,
      Object.fromEntries(
        Object.entries(after[group])
          .map(([key, value]) => [key, value - (before[group][key] ?? 0)] as const)
          .filter(([, value]) => value !== 0),
      ),
    ]),
  ) as Record<CounterGroup, Record<string, number>>;
}

/** Counts what `action` adds to the safety metrics. */
export async function counted(action: () => Promise<unknown>, overrides?: Record<string, unknown>) {
  const before = await metrics(overrides);
  await action();
  return delta(before, await metrics(overrides));
}

/** Invalidates the whole answer cache (through the webhook, as the CMS would). */
export async function resetCache(overrides?: Record<string, unknown>) {
  const response = await call(`/v1/ingest?token=${TOKEN}`, { method: "POST" }, overrides);
  if (response.status !== 200)
    throw new Error(`ingest answered ${response.status}: ${await response.text()}`);
  return (await response.json()) as Record<string, unknown>;
}
