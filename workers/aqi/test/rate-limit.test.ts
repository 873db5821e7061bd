import { env } from "cloudflare:workers";
import { withinOneWindow } from "@edge-platform/shared/testing/rate-limit-window";
import { describe, expect, it } from "vitest";
import { freshIp, postJson, validRequest, worker } from "./helpers.ts";

describe("rate limits per client IP (CF-Connecting-IP)", () => {
  it("the limits come from wrangler.toml vars", () => {
    expect(env.PREDICT_RATE_LIMIT_PER_MINUTE).toBe("60");
    expect(env.BATCH_RATE_LIMIT_PER_MINUTE).toBe("20");
  });

  it("predict: 60 per minute, then 429 with Retry-After; other IPs unaffected", () =>
    withinOneWindow(async () => {
      const ip = freshIp();
      for (let index = 0; index < 60; index += 1) {
        const response = await postJson(worker, "/v1/predict", validRequest(), ip);
        expect(response.status).not.toBe(429);
        await response.arrayBuffer();
      }
      const refused = await postJson(worker, "/v1/predict", validRequest(), ip);
      expect(refused.status).toBe(429);
      expect(await refused.json()).toEqual({ detail: "Rate limit exceeded: 60 per 1 minute" });
      const retryAfter = Number(refused.headers.get("Retry-After"));
      expect(retryAfter).toBeGreaterThanOrEqual(1);
      expect(retryAfter).toBeLessThanOrEqual(60);
      expect(refused.headers.get("X-Request-ID")).toMatch(/^[0-9a-f]{8}$/);

      // The batch route has its own quota, and another client its own.
      const batch = await postJson(worker, "/v1/predict/batch", { requests: [validRequest()] }, ip);
      expect(batch.status).not.toBe(429);
      const other = await postJson(worker, "/v1/predict", validRequest(), freshIp());
      expect(other.status).not.toBe(429);
    }));

  it("batch: 20 per minute", () =>
    withinOneWindow(async () => {
      const ip = freshIp();
      const body = { requests: [validRequest(), validRequest({ hour: 9 })] };
      for (let index = 0; index < 20; index += 1) {
        const response = await postJson(worker, "/v1/predict/batch", body, ip);
        expect(response.status).not.toBe(429);
        await response.arrayBuffer();
      }
      const refused = await postJson(worker, "/v1/predict/batch", body, ip);
      expect(refused.status).toBe(429);
      expect(await refused.json()).toEqual({ detail: "Rate limit exceeded: 20 per 1 minute" });
      expect(refused.headers.get("Retry-After")).toMatch(/^\d+$/);
    }));

  it("invalid bodies are answered 422 and use no quota", async () => {
    const ip = freshIp();
    for (let index = 0; index < 25; index += 1) {
      const response = await postJson(worker, "/v1/predict/batch", { requests: [] }, ip);
      expect(response.status).toBe(422);
      await response.arrayBuffer();
    }
    const valid = await postJson(worker, "/v1/predict/batch", { requests: [validRequest()] }, ip);
    expect(valid.status).not.toBe(429);
  });
});
