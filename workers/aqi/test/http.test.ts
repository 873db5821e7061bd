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
    const predict = await exports.default.fetch("http://aqi/v1/predict");
    expect(predict.status).toBe(405);
    expect(predict.headers.get("Allow")).toBe("POST");
  });

  it("/openapi.json documents every route from the validating schemas; /docs and /redoc serve it", async () => {
    const spec = (await (await exports.default.fetch("http://aqi/openapi.json")).json()) as {
      paths: Record<string, Record<string, { responses: Record<string, unknown> }>>;
      components: {
        schemas: Record<string, { properties: Record<string, unknown>; required: string[] }>;
      };
    };
    expect(Object.keys(spec.paths).sort()).toEqual([
      "/v1/health",
      "/v1/model/info",
      "/v1/predict",
      "/v1/predict/batch",
    ]);
    expect(Object.keys(spec.paths["/v1/predict"]!.post!.responses).sort()).toEqual([
      "200",
      "422",
      "429",
      "500",
      "503",
    ]);
    const request = spec.components.schemas.PredictionRequest!;
    expect(request.required).toEqual([
      "station",
      "season",
      "latitude",
      "longitude",
      "temperature",
      "humidity",
      "wind_speed",
      "visibility",
      "day",
      "month",
      "hour",
      "day_of_week",
      "is_weekend",
    ]);
    expect(request.properties.humidity).toMatchObject({ type: "number", minimum: 0, maximum: 100 });
    expect(request.properties.day).toMatchObject({ type: "integer", minimum: 1, maximum: 31 });
    expect(request.properties.season).toMatchObject({
      enum: ["Winter", "Summer", "Monsoon", "Post-Monsoon"],
    });
    expect(request.properties.is_weekend).toMatchObject({ type: "integer", enum: [0, 1] });
    expect(spec.components.schemas.BatchPredictionRequest!.properties.requests).toMatchObject({
      type: "array",
      minItems: 1,
      maxItems: 100,
    });
    expect(await (await exports.default.fetch("http://aqi/docs")).text()).toContain(
      "/openapi.json",
    );
    expect(await (await exports.default.fetch("http://aqi/redoc")).text()).toContain("<redoc");
  });
});
