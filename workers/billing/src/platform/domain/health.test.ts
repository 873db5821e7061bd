import { describe, expect, it } from "vitest";
import { checkHealth } from "./health.ts";

describe("checkHealth", () => {
  it("lists every dependency as up when all checks pass", async () => {
    const report = await checkHealth({ d1: async () => 1, durableObjects: async () => "pong" });
    expect(report).toEqual({
      status: "ok",
      info: { d1: { status: "up" }, durableObjects: { status: "up" } },
      error: {},
      details: { d1: { status: "up" }, durableObjects: { status: "up" } },
    });
  });

  it("puts a failing dependency under error with its message", async () => {
    const report = await checkHealth({
      d1: async () => {
        throw new Error("D1_ERROR: no such database");
      },
      durableObjects: async () => "pong",
    });
    expect(report.status).toBe("error");
    expect(report.error).toEqual({ d1: { status: "down", message: "D1_ERROR: no such database" } });
    expect(report.info).toEqual({ durableObjects: { status: "up" } });
  });

  it("treats a check that throws synchronously as down", async () => {
    const report = await checkHealth({
      d1: () => {
        throw new Error("prepare failed");
      },
    });
    expect(report.error.d1).toEqual({ status: "down", message: "prepare failed" });
  });

  it("treats a check that hangs as down", async () => {
    const report = await checkHealth({ d1: () => new Promise(() => {}) }, 20);
    expect(report.error.d1).toEqual({ status: "down", message: "timed out after 20 ms" });
  });
});
