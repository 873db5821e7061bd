import { createApp } from "./app.ts";

export { RateLimiter } from "@edge-platform/shared/rate-limit/rate-limiter";
export { SafetyMetrics } from "./durable-objects/safety-metrics.ts";

const app = createApp();

export default {
  fetch: app.fetch,
} satisfies ExportedHandler<Env>;
