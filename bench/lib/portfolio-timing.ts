/** Timing helpers for bench/portfolio.ts: time to first token and to done of an SSE answer. */
import { performance } from "node:perf_hooks";

export interface Timing {
  /** Until the first token event arrived (for plain routes: the first body byte). */
  firstTokenMs: number;
  /** Until the done event (for plain routes: the end of the body). */
  doneMs: number;
  cached: boolean;
  tokens: number;
  /** The worker's own `latency_ms` from the done event. */
  workerLatencyMs: number | null;
}

export async function timePlain(url: string): Promise<Timing> {
  const started = performance.now();
  const response = await fetch(url);
  const reader = response.body!.getReader();
  let first = Number.NaN;
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    if (Number.isNaN(first) && value.length > 0) first = performance.now() - started;
  }
  if (!response.ok) throw new Error(`${url} answered ${response.status}`);
  return {
    firstTokenMs: first,
    doneMs: performance.now() - started,
    cached: false,
    tokens: 0,
    workerLatencyMs: null,
  };
}

export async function timeChat(
  url: string,
  token: string,
  body: Record<string, unknown>,
): Promise<Timing> {
  const started = performance.now();
  const response = await fetch(url, {
    method: "POST",
    headers: { "Content-Type": "application/json", Authorization: `Bearer ${token}` },
    body: JSON.stringify(body),
  });
  if (response.status !== 200)
    throw new Error(`chat answered ${response.status}: ${await response.text()}`);
  const reader = response.body!.pipeThrough(new TextDecoderStream()).getReader();
  let buffered = "";
  let firstToken = Number.NaN;
  let tokens = 0;
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    buffered += value;
    const events = buffered.split("\n\n");
    buffered = events.pop() ?? "";
    for (const raw of events) {
      const event = JSON.parse(raw.slice("data: ".length)) as {
        type: string;
        cached?: boolean;
        latency_ms?: number;
      };
      if (event.type === "token") {
        tokens += 1;
        if (Number.isNaN(firstToken)) firstToken = performance.now() - started;
      } else if (event.type === "done") {
        const doneMs = performance.now() - started;
        // Drain the (empty) rest of the body.
        while (!(await reader.read()).done) {}
        return {
          firstTokenMs: firstToken,
          doneMs,
          cached: Boolean(event.cached),
          tokens,
          workerLatencyMs: event.latency_ms ?? null,
        };
      }
    }
  }
  throw new Error("the stream ended without a done event");
}
