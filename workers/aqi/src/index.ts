import { createApp } from "./app.ts";

export { RateLimiter } from "@edge-platform/shared/rate-limit/rate-limiter";

const app = createApp();

export default {
  fetch: app.fetch,
} satisfies ExportedHandler<Env>;
