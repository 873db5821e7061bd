import type { CorrelationIdVariables } from "@edge-platform/shared/http/correlation-id";

export type AppEnv = {
  Bindings: Env;
  Variables: CorrelationIdVariables;
};
