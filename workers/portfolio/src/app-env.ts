import type { CorrelationIdVariables } from "@edge-platform/shared/http/correlation-id";
import type { RequestIdVariables } from "@edge-platform/shared/http/request-id";

export type AppEnv = {
  Bindings: Env;
  Variables: CorrelationIdVariables & RequestIdVariables;
};
