import { exports } from "cloudflare:workers";
import { describe, expect, it } from "vitest";

describe("portfolio HTTP basics", () => {
  it("GET /v1/health", async () => {
    const response = await exports.default.fetch("http://portfolio/v1/health");
    expect(response.status).toBe(200);
    const body = (await response.json()) as Record<string, unknown>;
    expect(body).toEqual({ status: "healthy", version: "1.0.0", timestamp: expect.any(String) });
  });

  it("unknown route: 404 in the error envelope with the request id", async () => {
    const response = await exports.default.fetch("http://portfolio/v1/nope");
    expect(response.status).toBe(404);
    const requestId = response.headers.get("X-Request-ID");
    expect(requestId).toMatch(/^[0-9a-f]{8}$/);
    expect(await response.json()).toEqual({
      error: {
        code: 404,
        type: "NOT_FOUND",
        message: "No route for GET /v1/nope",
        request_id: requestId,
      },
    });
  });

  it("wrong method: 405 in the error envelope", async () => {
    const response = await exports.default.fetch("http://portfolio/v1/health", {
      method: "DELETE",
    });
    expect(response.status).toBe(405);
    const body = (await response.json()) as { error: { type: string } };
    expect(body.error.type).toBe("METHOD_NOT_ALLOWED");
  });

  it("sends X-Response-Time on every response, errors included", async () => {
    for (const path of ["/v1/health", "/v1/nope"]) {
      const response = await exports.default.fetch(`http://portfolio${path}`);
      expect(response.headers.get("X-Response-Time")).toMatch(/^\d+\.\dms$/);
    }
  });

  it("sends the security headers on every response", async () => {
    for (const path of ["/v1/health", "/v1/nope"]) {
      const response = await exports.default.fetch(`http://portfolio${path}`);
      expect(response.headers.get("X-Content-Type-Options")).toBe("nosniff");
      expect(response.headers.get("X-Frame-Options")).toBe("DENY");
      expect(response.headers.get("Content-Security-Policy")).toContain("frame-ancestors 'none'");
    }
  });
});
