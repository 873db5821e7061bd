import { env, exports } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { createApp } from "../src/app.ts";

const UUID_V4 = /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;

function expectBillingError(body: unknown, status: number, error: string, path: string) {
  expect(body).toEqual({
    statusCode: status,
    message: expect.anything(),
    error,
    correlationId: expect.stringMatching(UUID_V4),
    timestamp: expect.any(String),
    path,
  });
  expect(Number.isNaN(Date.parse((body as { timestamp: string }).timestamp))).toBe(false);
}

describe("GET /health", () => {
  it("reports D1 and the Durable Object layer up", async () => {
    const response = await exports.default.fetch("http://billing/health");
    expect(response.status).toBe(200);
    expect(await response.json()).toEqual({
      status: "ok",
      info: { d1: { status: "up" }, durableObjects: { status: "up" } },
      error: {},
      details: { d1: { status: "up" }, durableObjects: { status: "up" } },
    });
  });

  it("answers 503 naming the dependency that is down", async () => {
    const brokenD1 = {
      prepare() {
        throw new Error("D1_ERROR: database unavailable");
      },
    } as unknown as D1Database;
    const response = await createApp().fetch(new Request("http://billing/health"), {
      DB: brokenD1,
      RATE_LIMITER: env.RATE_LIMITER,
    });
    expect(response.status).toBe(503);
    const body = (await response.json()) as Record<string, unknown>;
    expect(body.status).toBe("error");
    expect(body.error).toEqual({
      d1: { status: "down", message: "D1_ERROR: database unavailable" },
    });
    expect(body.info).toEqual({ durableObjects: { status: "up" } });
  });
});

describe("GET /health/live", () => {
  it("answers ok without touching any binding", async () => {
    const untouchable = new Proxy(
      {},
      {
        get(_, key) {
          throw new Error(`liveness touched a binding (${String(key)})`);
        },
      },
    );
    const response = await createApp().fetch(new Request("http://billing/health/live"), {
      DB: untouchable as D1Database,
      RATE_LIMITER: untouchable as DurableObjectNamespace,
    });
    expect(response.status).toBe(200);
    expect(await response.json()).toEqual({ status: "ok" });
  });

  it("is served by the deployed worker too", async () => {
    const response = await exports.default.fetch("http://billing/health/live");
    expect(response.status).toBe(200);
    expect(await response.json()).toEqual({ status: "ok" });
    expect(response.headers.get("x-correlation-id")).toMatch(/^[0-9a-f-]{36}$/);
  });
});

describe("correlation id", () => {
  it("reuses a client UUID and echoes it", async () => {
    const id = "0b4c7d2e-1f3a-4b5c-8d6e-7f8091a2b3c4";
    const response = await exports.default.fetch("http://billing/health", {
      headers: { "x-correlation-id": id },
    });
    expect(response.headers.get("x-correlation-id")).toBe(id);
  });

  it("replaces a value that is not a UUID with a fresh v4", async () => {
    const response = await exports.default.fetch("http://billing/health", {
      headers: { "x-correlation-id": "not-a-uuid forged log line" },
    });
    expect(response.headers.get("x-correlation-id")).toMatch(UUID_V4);
  });

  it("puts the same id in error bodies and headers", async () => {
    const response = await exports.default.fetch("http://billing/api/v1/nope");
    const body = (await response.json()) as { correlationId: string };
    expect(body.correlationId).toBe(response.headers.get("x-correlation-id"));
  });
});

describe("errors in the billing shape", () => {
  it("unknown route: 404 Cannot GET <path>", async () => {
    const response = await exports.default.fetch("http://billing/api/v1/unknown?x=1");
    expect(response.status).toBe(404);
    const body = await response.json();
    expectBillingError(body, 404, "Not Found", "/api/v1/unknown?x=1");
    expect((body as { message: string }).message).toBe("Cannot GET /api/v1/unknown");
  });

  it("wrong method: 405 with Allow", async () => {
    const response = await exports.default.fetch("http://billing/health", { method: "DELETE" });
    expect(response.status).toBe(405);
    expect(response.headers.get("Allow")).toBe("GET, HEAD");
    expectBillingError(await response.json(), 405, "Method Not Allowed", "/health");
  });
});

describe("API documentation", () => {
  it("serves the OpenAPI document and the interactive page", async () => {
    const doc = await exports.default.fetch("http://billing/api/docs-json");
    expect(doc.status).toBe(200);
    const spec = (await doc.json()) as { openapi: string; paths: Record<string, unknown> };
    expect(spec.openapi).toBe("3.1.0");
    expect(Object.keys(spec.paths)).toEqual(
      expect.arrayContaining([
        "/health",
        "/api/v1/auth/register",
        "/api/v1/auth/login",
        "/api/v1/tenants/{id}/members/{userId}",
        "/api/v1/api-keys/{id}",
      ]),
    );
    const page = await exports.default.fetch("http://billing/api/docs");
    expect(page.status).toBe(200);
    expect(await page.text()).toContain("/api/docs-json");
  });
});
