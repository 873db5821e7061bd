import { ApiError } from "@edge-platform/shared/http/api-error";
import { createRoute, OpenAPIHono, z } from "@hono/zod-openapi";
import type { AppEnv } from "../app-env.ts";
import { safetyMetrics } from "../durable-objects/safety-metrics.ts";
import {
  type ChatEvent,
  runChat,
  runChatWithoutStore,
  type Source,
} from "../services/chat-pipeline.ts";
import { chatDeps, hasStore, storelessChatDeps } from "../services/wiring.ts";
import { ErrorResponse, validationHook } from "./errors.ts";
import { bearerAuth, enforceRateLimit } from "./guards.ts";

const required = (kind: string) => (issue: { input?: unknown }) =>
  issue.input === undefined ? "Field required" : `Input should be a valid ${kind}`;

// Markup and injection characters the original refused in session ids, plus control characters.
const SESSION_ID_FORBIDDEN = /[<>"'%;()&+]/;
const hasControlCharacter = (value: string) =>
  [...value].some((ch) => ch.charCodeAt(0) < 0x20 || ch.charCodeAt(0) === 0x7f);

export const ChatRequestBody = z
  .strictObject(
    {
      question: z
        .string({ error: required("string") })
        .trim()
        .min(1, { error: "Question cannot be empty or whitespace only.", abort: true })
        .min(2, "String should have at least 2 characters")
        .max(500, "String should have at most 500 characters")
        .openapi({ example: "What projects has Avery built?" }),
      session_id: z
        .string({ error: required("string") })
        .trim()
        .min(1, { error: "Session ID cannot be empty.", abort: true })
        .max(100, "String should have at most 100 characters")
        .refine((value) => !SESSION_ID_FORBIDDEN.test(value) && !hasControlCharacter(value), {
          error: `Session ID contains invalid characters (< > " ' % ; ( ) & + or control characters). A UUID is recommended.`,
        })
        .openapi({ example: "5f0c7a9e-2d7b-4d8e-9d43-0a3c1b2e4f60" }),
      use_cache: z.boolean({ error: required("boolean") }).default(true),
      stream: z.boolean({ error: required("boolean") }).default(true),
    },
    {
      error: (issue) =>
        issue.code === "unrecognized_keys" ? "Extra inputs are not permitted" : undefined,
    },
  )
  .openapi("ChatRequest");

const SourceSchema = z
  .object({ id: z.string(), type: z.string(), title: z.string() })
  .openapi("Source");

const ChatJsonResponse = z
  .object({
    response: z.string(),
    cached: z.boolean(),
    latency_ms: z.number(),
    sources: z.array(SourceSchema),
  })
  .openapi("ChatResponse");

const countMap = z.record(z.string(), z.number().int());
const SafetyMetricsResponse = z
  .object({
    started_at: z.string(),
    uptime_seconds: z.number().int(),
    totals: countMap,
    response_routes: countMap,
    pre_router_categories: countMap,
    pre_router_reasons: countMap,
    retrieval_gate_reasons: countMap,
    fallback_reasons: countMap,
  })
  .openapi("SafetyMetrics");

const errorResponses = (codes: number[]) =>
  Object.fromEntries(
    codes.map((code) => [
      code,
      {
        description: `Error (${code})`,
        content: { "application/json": { schema: ErrorResponse } },
      },
    ]),
  );

const chatRoute = createRoute({
  method: "post",
  path: "/chat",
  tags: ["chat"],
  summary: "Ask a question about the portfolio",
  description:
    'Streams `data: {"type":"token","content":...}` events then one `done` event (`stream: true`, the default), or answers `{response, cached, latency_ms, sources}` (`stream: false`). Auth runs before validation; the rate limit (per client IP) after both.',
  security: [{ bearer: [] }],
  middleware: [bearerAuth] as const,
  request: {
    body: { required: true, content: { "application/json": { schema: ChatRequestBody } } },
  },
  responses: {
    200: {
      description: "The answer (always 200, fallbacks included)",
      content: {
        "text/event-stream": { schema: z.string() },
        "application/json": { schema: ChatJsonResponse },
      },
    },
    ...errorResponses([401, 422, 429, 500]),
  },
});

const metricsRoute = createRoute({
  method: "get",
  path: "/chat/safety-metrics",
  tags: ["chat"],
  summary: "Safety and routing counters (global across isolates)",
  security: [{ bearer: [] }],
  middleware: [bearerAuth] as const,
  responses: {
    200: {
      description: "Counter snapshot",
      content: { "application/json": { schema: SafetyMetricsResponse } },
    },
    ...errorResponses([401, 500]),
  },
});

const SSE_HEADERS = {
  "Content-Type": "text/event-stream; charset=utf-8",
  "Cache-Control": "no-cache",
  Connection: "keep-alive",
  "X-Accel-Buffering": "no",
};

function eventStream(events: AsyncGenerator<ChatEvent>): ReadableStream<Uint8Array> {
  const encoder = new TextEncoder();
  return new ReadableStream({
    async pull(controller) {
      const next = await events.next();
      if (next.done) controller.close();
      else controller.enqueue(encoder.encode(`data: ${JSON.stringify(next.value)}\n\n`));
    },
    async cancel() {
      await events.return(undefined);
    },
  });
}

export const chatRoutes = new OpenAPIHono<AppEnv>({ defaultHook: validationHook })
  .openapi(chatRoute, async (c) => {
    const body = c.req.valid("json");
    const settings = c.get("settings");
    await enforceRateLimit(c, "chat", settings.chatRateLimitPerMinute);
    const request = {
      question: body.question,
      sessionId: body.session_id,
      useCache: body.use_cache,
    };
    const events = hasStore(c)
      ? runChat(chatDeps(c), request)
      : runChatWithoutStore(storelessChatDeps(c), request);
    if (body.stream) return c.body(eventStream(events), 200, SSE_HEADERS) as never;
    let response = "";
    let cached = false;
    let latency = 0;
    let sources: Source[] = [];
    for await (const event of events) {
      if (event.type === "token") response += event.content;
      else {
        cached = event.cached;
        latency = event.latency_ms;
        sources = event.sources;
      }
    }
    if (!response.trim())
      throw new ApiError(503, "The answer service is unavailable.", { code: "LLM_FAILED" });
    return c.json({ response, cached, latency_ms: latency, sources }, 200);
  })
  .openapi(metricsRoute, async (c) => {
    const snapshot = await safetyMetrics(c.env.SAFETY_METRICS).snapshot();
    return c.json(snapshot, 200);
  });
