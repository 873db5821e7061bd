import type { CorrelationIdVariables } from "@edge-platform/shared/http/correlation-id";
import type { RequestIdVariables } from "@edge-platform/shared/http/request-id";
import type { Settings } from "./domain/settings.ts";

export type AppEnv = {
  Bindings: Env;
  Variables: CorrelationIdVariables & RequestIdVariables & { settings: Settings };
};
