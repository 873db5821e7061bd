import { ApiError } from "@edge-platform/shared/http/api-error";
import { createRoute, OpenAPIHono, z } from "@hono/zod-openapi";
import type { AppEnv } from "../app-env.ts";
import { CmsUnavailableError } from "../providers/content-sources.ts";
import { reingestDevContent } from "../services/dev-content.ts";
import { invalidateThenIngest } from "../services/ingestion.ts";
import { contentSource, hasStore, ingestDeps } from "../services/wiring.ts";
import { ErrorResponse, validationHook } from "./errors.ts";
import { enforceRateLimit, verifyToken } from "./guards.ts";

const IngestResponse = z
  .object({
    status: z.literal("ok"),
    mode: z.enum(["cms", "dev"]),
    chunks_ingested: z.number().int(),
    cache_invalidated: z.number().int(),
    chunks_embedded: z.number().int().optional(),
    chunks_unchanged: z.number().int().optional(),
    chunks_removed: z.number().int().optional(),
    sources: z.record(z.string(), z.number().int()).optional(),
  })
  .openapi("IngestResult");

const ingestRoute = createRoute({
  method: "post",
  path: "/ingest",
  tags: ["ingest"],
  summary: "CMS webhook: invalidate the answer cache, then re-ingest the portfolio",
  description:
    "Called by the CMS on create/update/delete. The body is ignored; every call re-reads all content, upserts chunks by source id and removes chunks whose source is gone. Rate limited per client IP before the token check.",
  request: { query: z.object({ token: z.string().optional() }) },
  responses: {
    200: { description: "Ingested", content: { "application/json": { schema: IngestResponse } } },
    ...Object.fromEntries(
      [401, 429, 500, 503].map((code) => [
        code,
        {
          description: `Error (${code})`,
          content: { "application/json": { schema: ErrorResponse } },
        },
      ]),
    ),
  },
});

export const ingestRoutes = new OpenAPIHono<AppEnv>({ defaultHook: validationHook }).openapi(
  ingestRoute,
  async (c) => {
    const settings = c.get("settings");
    // Counted before the token check, so guessing tokens is rate limited too.
    await enforceRateLimit(c, "ingest", settings.ingestRateLimitPerMinute);
    await verifyToken(
      settings,
      c.req.valid("query").token,
      "pass it as the `token` query parameter",
    );

    if (!hasStore(c)) {
      if (settings.devMode)
        return c.json(
          { status: "ok" as const, mode: "dev" as const, chunks_ingested: 0, cache_invalidated: 0 },
          200,
        );
      throw new ApiError(
        503,
        "The database service is temporarily unavailable. Please try again later.",
        {
          code: "SERVICE_UNAVAILABLE",
        },
      );
    }
    const source = contentSource(c);
    if (!source)
      throw new ApiError(503, "The content service is not configured (SANITY_PROJECT_ID).", {
        code: "SERVICE_UNAVAILABLE",
      });
    const deps = ingestDeps(c);
    try {
      const result = settings.devMode
        ? await reingestDevContent(deps)
        : await invalidateThenIngest(deps, () => source.load());
      return c.json(
        {
          status: "ok" as const,
          mode: settings.devMode ? ("dev" as const) : ("cms" as const),
          ...result,
        },
        200,
      );
    } catch (error) {
      if (error instanceof ApiError) throw error;
      console.log(
        JSON.stringify({
          level: "error",
          msg: "ingestion failed",
          request_id: c.get("requestId"),
          error: String(error),
        }),
      );
      if (error instanceof CmsUnavailableError)
        throw new ApiError(
          503,
          "The content service is temporarily unavailable. Please try again later.",
          {
            code: "SERVICE_UNAVAILABLE",
          },
        );
      throw new ApiError(500, "Ingestion failed. See the server logs for details.", {
        code: "INGESTION_FAILED",
      });
    }
  },
);
