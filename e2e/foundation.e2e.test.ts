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

describe("malformed JSON bodies in each service's error shape", () => {
  const malformed = '{"email": "a@b.co", "password": }';

  it("billing: 400 with the position of the error", async () => {
    const response = await fetch(`${billingUrl}/api/v1/auth/login`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: malformed,
    });
    expect(response.status).toBe(400);
    expect(await response.json()).toMatchObject({
      statusCode: 400,
      error: "Bad Request",
      message: "Malformed JSON in request body: Expecting value at position 32",
      path: "/api/v1/auth/login",
    });
  });

  it("aqi: FastAPI's 422 json_invalid with the character offset", async () => {
    const response = await fetch(`${aqiUrl}/v1/predict`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: '{"station": "Lodhi Road", "season": }',
    });
    expect(response.status).toBe(422);
    expect(await response.json()).toEqual({
      detail: [
        {
          type: "json_invalid",
          loc: ["body", 36],
          msg: "JSON decode error",
          input: {},
          ctx: { error: "Expecting value" },
        },
      ],
    });
  });

  it("portfolio: 422 VALIDATION_ERROR in the envelope", async () => {
    const response = await fetch(`${portfolioUrl}/v1/chat`, {
      method: "POST",
      headers: {
        "content-type": "application/json",
        authorization: "Bearer dev-portfolio-api-token-0123456789",
      },
      body: '{"question": "Where does Avery work?", }',
    });
    expect(response.status).toBe(422);
    const body = (await response.json()) as { error: Record<string, unknown> };
    expect(body.error).toMatchObject({ code: 422, type: "VALIDATION_ERROR" });
    expect(String(body.error.message)).toContain("JSON");
    expect(body.error.request_id).toBe(response.headers.get("X-Request-ID"));
  });
});
