import { createApp } from "./app.ts";
import { ModelHost } from "./inference/model-host.ts";
import { shippedModel } from "./inference/shipped-model.ts";

export { RateLimiter } from "@edge-platform/shared/rate-limit/rate-limiter";

// Module scope: one model host, hence one inference session, per isolate.
const app = createApp({ model: new ModelHost(shippedModel) });

export default {
  fetch: app.fetch,
} satisfies ExportedHandler<Env>;
