/**
 * The local stack `npm run dev` starts, as its environment configures it:
 * one `wrangler dev` process per service, its port, configs and state.
 * Shared by scripts/dev.ts and scripts/cron.ts (which finds the running
 * stack the same way).
 *
 * Environment: BILLING_PORT, AQI_PORT, PORTFOLIO_PORT (8787, 8788, 8789);
 * STATE_DIR for the local databases (.wrangler/state).
 */
import path from "node:path";
import { ROOT } from "./wrangler.ts";

function port(env: NodeJS.ProcessEnv, name: string, fallback: number): number {
  const value = Number(env[name] ?? fallback);
  if (!Number.isInteger(value) || value < 1 || value > 65535)
    throw new Error(`${name} must be a TCP port`);
  return value;
}

export function devStateDir(env: NodeJS.ProcessEnv = process.env): string {
  return path.resolve(ROOT, env.STATE_DIR ?? ".wrangler/state");
}

export function devServices(env: NodeJS.ProcessEnv = process.env) {
  const stateDir = devStateDir(env);
  return [
    {
      name: "billing",
      port: port(env, "BILLING_PORT", 8787),
      configs: ["wrangler.toml", "workers/usage-consumer/wrangler.toml"],
      varsDir: ROOT,
      persistTo: path.join(stateDir, "billing"),
      health: "/health",
      links: ["/console", "/health", "/api/v1", "/api/docs"],
    },
    {
      name: "aqi",
      port: port(env, "AQI_PORT", 8788),
      configs: ["workers/aqi/wrangler.toml"],
      varsDir: path.join(ROOT, "workers/aqi"),
      persistTo: path.join(stateDir, "aqi"),
      health: "/v1/health",
      links: ["/", "/v1/health", "/docs", "/redoc"],
    },
    {
      name: "portfolio",
      port: port(env, "PORTFOLIO_PORT", 8789),
      configs: ["workers/portfolio/wrangler.toml"],
      varsDir: path.join(ROOT, "workers/portfolio"),
      persistTo: path.join(stateDir, "portfolio"),
      health: "/v1/health",
      links: ["/", "/v1/health", "/docs"],
    },
  ] as const;
}

/** The services as the cron runner sees them: where each listens and its configs. */
export function localWorkerProcesses(services: ReturnType<typeof devServices>) {
  return services.map((service) => ({
    name: service.name,
    url: `http://127.0.0.1:${service.port}`,
    configs: service.configs,
  }));
}
