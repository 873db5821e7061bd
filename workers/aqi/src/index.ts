import { createApp } from "./app.ts";
import { ModelHost } from "./inference/model-host.ts";
import {
  shippedHistoryModel,
  shippedModel,
  shippedReadingModel,
} from "./inference/shipped-model.ts";

export { RateLimiter } from "@edge-platform/shared/rate-limit/rate-limiter";

// Module scope: one host per model, hence one inference session per model and isolate.
const app = createApp({
  model: new ModelHost(shippedModel),
  readingModel: new ModelHost(shippedReadingModel),
  historyModel: new ModelHost(shippedHistoryModel),
});

export default {
  fetch: app.fetch,
} satisfies ExportedHandler<Env>;
