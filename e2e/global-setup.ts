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
  // Small archive files of one size that settle quickly, so the archive's
  // end-to-end test sees whole Parquet files within seconds on the shared
  // stack and knows how many to expect.
  stack = await startStack({
    timeoutMs: 150_000,
    billingVars: {
      USAGE_ARCHIVE_FILE_EVENTS: "200",
      USAGE_ARCHIVE_FILE_SPREAD: "0",
      USAGE_ARCHIVE_SETTLE_SECONDS: "5",
    },
    // The state is thrown away at the end: stopping need not wait (up to
    // 10 s) for usage events still in flight. The restart tests drain their
    // own stacks.
    env: { DEV_DRAIN_SECONDS: "0" },
  });
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
