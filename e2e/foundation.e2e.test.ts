import { describe, expect, inject, it } from "vitest";

const { billingUrl, aqiUrl, portfolioUrl } = inject("stack");

describe("the local stack answers on every worker", () => {
  it("billing /health checks D1 and Durable Objects", async () => {
    const response = await fetch(`${billingUrl}/health`);
    expect(response.status).toBe(200);
    expect(await response.json()).toMatchObject({
      status: "ok",
      info: { d1: { status: "up" }, durableObjects: { status: "up" } },
    });
    expect(response.headers.get("x-correlation-id")).toMatch(/^[0-9a-f-]{36}$/);
  });

  it("aqi /v1/health", async () => {
    const response = await fetch(`${aqiUrl}/v1/health`);
    expect(response.status).toBe(200);
    const body = (await response.json()) as { status: string; model_loaded: boolean };
    expect(body.status).toBe(body.model_loaded ? "healthy" : "degraded");
  });

  it("portfolio /v1/health", async () => {
    const response = await fetch(`${portfolioUrl}/v1/health`);
    expect(response.status).toBe(200);
    expect(await response.json()).toMatchObject({ status: "healthy" });
  });
});

describe("unknown routes and wrong methods in each service's error shape", () => {
  it("billing", async () => {
    const response = await fetch(`${billingUrl}/api/v1/does-not-exist`);
    expect(response.status).toBe(404);
    const body = (await response.json()) as Record<string, unknown>;
    expect(body).toMatchObject({
      statusCode: 404,
      error: "Not Found",
      message: "Cannot GET /api/v1/does-not-exist",
      path: "/api/v1/does-not-exist",
    });
    expect(body.correlationId).toBe(response.headers.get("x-correlation-id"));
    const wrongMethod = await fetch(`${billingUrl}/health`, { method: "POST" });
    expect(wrongMethod.status).toBe(405);
    expect(await wrongMethod.json()).toMatchObject({
      statusCode: 405,
      error: "Method Not Allowed",
    });
  });

  it("aqi", async () => {
    const response = await fetch(`${aqiUrl}/v1/does-not-exist`);
    expect(response.status).toBe(404);
    expect(await response.json()).toEqual({ detail: "Not Found" });
    const wrongMethod = await fetch(`${aqiUrl}/v1/health`, { method: "DELETE" });
    expect(wrongMethod.status).toBe(405);
    expect(await wrongMethod.json()).toEqual({ detail: "Method Not Allowed" });
  });

  it("portfolio", async () => {
    const response = await fetch(`${portfolioUrl}/v1/does-not-exist`);
    expect(response.status).toBe(404);
    const body = (await response.json()) as { error: Record<string, unknown> };
    expect(body.error).toMatchObject({ code: 404, type: "NOT_FOUND" });
    expect(body.error.request_id).toBe(response.headers.get("X-Request-ID"));
  });
});

describe("API documentation", () => {
  it.each([
    ["billing", () => `${billingUrl}/api/docs-json`],
    ["aqi", () => `${aqiUrl}/openapi.json`],
    ["portfolio", () => `${portfolioUrl}/openapi.json`],
  ])("%s serves its OpenAPI document", async (_name, url) => {
    const response = await fetch(url());
    expect(response.status).toBe(200);
    expect(((await response.json()) as { openapi: string }).openapi).toMatch(/^3\./);
  });
});
