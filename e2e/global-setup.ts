import type { TestProject } from "vitest/node";
import { type RunningStack, startStack } from "../scripts/lib/stack.ts";

declare module "vitest" {
  export interface ProvidedContext {
    stack: { billingUrl: string; aqiUrl: string; portfolioUrl: string; billingPersistTo: string };
  }
}

let stack: RunningStack | undefined;

export async function setup(project: TestProject) {
  const started = Date.now();
  stack = await startStack({ timeoutMs: 150_000 });
  console.log(`[e2e] stack ready in ${((Date.now() - started) / 1000).toFixed(1)} s`);
  project.provide("stack", {
    billingUrl: stack.billingUrl,
    aqiUrl: stack.aqiUrl,
    portfolioUrl: stack.portfolioUrl,
    billingPersistTo: stack.billingPersistTo,
  });
}

export async function teardown() {
  await stack?.stop();
}
