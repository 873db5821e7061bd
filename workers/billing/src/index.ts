import { createApp } from "./app.ts";
import { runSubscriptionJobs } from "./jobs/subscription-jobs.ts";

export { RateLimiter } from "@edge-platform/shared/rate-limit/rate-limiter";
export { EntitlementCounter } from "./durable-objects/entitlement-counter.ts";

const app = createApp();

export default {
  fetch: app.fetch,
  /** Cron Trigger (wrangler.toml [triggers]): the scheduled subscription transitions. */
  scheduled(controller, env, ctx) {
    ctx.waitUntil(
      runSubscriptionJobs(env, new Date(controller.scheduledTime)).then((report) => {
        if (report.activated + report.ended + report.rolled > 0) {
          console.log(JSON.stringify({ level: "info", msg: "subscription jobs", ...report }));
        }
      }),
    );
  },
} satisfies ExportedHandler<Env>;
