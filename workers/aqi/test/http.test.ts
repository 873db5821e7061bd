import { exports } from "cloudflare:workers";
import { describe, expect, it } from "vitest";

describe("aqi HTTP basics", () => {
  it("unknown route: FastAPI 404 body and X-Request-ID", async () => {
    const response = await exports.default.fetch("http://aqi/v1/unknown");
    expect(response.status).toBe(404);
    expect(await response.json()).toEqual({ detail: "Not Found" });
    expect(response.headers.get("X-Request-ID")).toMatch(/^[0-9a-f]{8}$/);
  });

  it("wrong method: 405 with Allow", async () => {
    const response = await exports.default.fetch("http://aqi/v1/health", { method: "POST" });
    expect(response.status).toBe(405);
    expect(response.headers.get("Allow")).toBe("GET, HEAD");
    expect(await response.json()).toEqual({ detail: "Method Not Allowed" });
  });

  it("serves /openapi.json, /docs and /redoc", async () => {
    const spec = (await (await exports.default.fetch("http://aqi/openapi.json")).json()) as {
      paths: Record<string, unknown>;
    };
    expect(Object.keys(spec.paths)).toContain("/v1/health");
    expect(await (await exports.default.fetch("http://aqi/docs")).text()).toContain(
      "/openapi.json",
    );
    expect(await (await exports.default.fetch("http://aqi/redoc")).text()).toContain("<redoc");
  });
});
