import { Hono } from "hono";
import { validator } from "hono/validator";
import { describe, expect, it } from "vitest";
import { ApiError } from "./api-error.ts";
import {
  allowedMethods,
  bufferRequestBody,
  installErrorHandling,
  type Problem,
} from "./error-handling.ts";

function appRecordingProblems() {
  const seen: Problem[] = [];
  const app = new Hono();
  app.use(bufferRequestBody());
  installErrorHandling(app, (c, problem) => {
    seen.push(problem);
    return c.json({ kind: problem.kind }, problem.status, problem.headers);
  });
  app.get("/items/:id", (c) => c.text("item"));
  app.delete("/items/:id", (c) => c.text("deleted"));
  app.post(
    "/items",
    validator("json", (value) => value),
    (c) => c.json(c.req.valid("json")),
  );
  app.get("/teapot", () => {
    throw new ApiError(409, "taken", { code: "conflict" });
  });
  app.get("/crash", () => {
    throw new TypeError("secret internals");
  });
  return { app, seen };
}

describe("installErrorHandling", () => {
  it("answers 405 with Allow for a known path and another method", async () => {
    const { app, seen } = appRecordingProblems();
    const response = await app.request("/items/7", { method: "PUT" });
    expect(response.status).toBe(405);
    expect(response.headers.get("Allow")).toBe("DELETE, GET, HEAD");
    expect(seen[0]?.kind).toBe("method_not_allowed");
  });

  it("answers 404 for an unknown path", async () => {
    const { app } = appRecordingProblems();
    const response = await app.request("/nothing-here");
    expect(response.status).toBe(404);
    expect(await response.json()).toEqual({ kind: "not_found" });
  });

  it("describes malformed JSON with the offset of the first error", async () => {
    const { app, seen } = appRecordingProblems();
    const response = await app.request("/items", {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: '{"name": }',
    });
    expect(response.status).toBe(400);
    expect(seen[0]).toMatchObject({
      kind: "malformed_json",
      jsonError: { position: 9, reason: "Expecting value", emptyBody: false },
    });
  });

  it("passes ApiError status, code and message through and hides crash details", async () => {
    const { app, seen } = appRecordingProblems();
    expect((await app.request("/teapot")).status).toBe(409);
    expect(seen[0]).toMatchObject({ status: 409, message: "taken", code: "conflict", kind: "api" });
    const crash = await app.request("/crash");
    expect(crash.status).toBe(500);
    expect(seen[1]).toMatchObject({
      status: 500,
      message: "Internal server error",
      kind: "internal",
    });
  });
});

describe("allowedMethods", () => {
  it("ignores middleware registrations", () => {
    const app = new Hono();
    app.use("*", async (_c, next) => next());
    app.post("/only-post", (c) => c.text("ok"));
    expect(allowedMethods(app, "/only-post")).toEqual(["POST"]);
    expect(allowedMethods(app, "/elsewhere")).toEqual([]);
  });
});
