import { createRequire } from "node:module";

/** The part of autocannon's options the benchmarks use (the package ships no types). */
export interface AutocannonOptions {
  url: string;
  method?: string;
  body?: string;
  headers?: Record<string, string>;
  /** Each request built anew: headers (or the body) may differ from one request to the next. */
  requests?: {
    setupRequest: (request: { headers: Record<string, string>; body?: string }) => unknown;
  }[];
  connections: number;
  duration?: number;
  /** A fixed number of requests instead of a duration. */
  amount?: number;
}

export interface AutocannonResult {
  requests: { total: number; average: number };
  latency: { p50: number; p90: number; p99: number; average: number };
  "2xx": number;
  non2xx: number;
  errors: number;
  timeouts: number;
}

export const autocannon = createRequire(import.meta.url)("autocannon") as (
  options: AutocannonOptions,
) => Promise<AutocannonResult>;
