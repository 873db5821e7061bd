export type DependencyStatus = { status: "up" } | { status: "down"; message: string };

export interface HealthReport {
  status: "ok" | "error";
  info: Record<string, DependencyStatus>;
  error: Record<string, DependencyStatus>;
  details: Record<string, DependencyStatus>;
}

export type DependencyCheck = () => Promise<unknown>;

function withTimeout<T>(promise: Promise<T>, ms: number): Promise<T> {
  return new Promise<T>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`timed out after ${ms} ms`)), ms);
    promise.then(
      (value) => {
        clearTimeout(timer);
        resolve(value);
      },
      (error: unknown) => {
        clearTimeout(timer);
        reject(error);
      },
    );
  });
}

/**
 * Runs every dependency check in parallel and reports them in the terminus
 * layout (`info` holds the healthy ones, `error` the failing ones, `details`
 * all of them), so a 503 still says which dependency is down.
 */
export async function checkHealth(
  checks: Record<string, DependencyCheck>,
  timeoutMs = 2000,
): Promise<HealthReport> {
  const names = Object.keys(checks);
  // A check that throws synchronously is as down as one that rejects.
  const outcomes = await Promise.allSettled(
    names.map((name) => withTimeout(Promise.resolve().then(checks[name]!), timeoutMs)),
  );
  const report: HealthReport = { status: "ok", info: {}, error: {}, details: {} };
  outcomes.forEach((outcome, index) => {
    const name = names[index]!;
    const entry: DependencyStatus =
      outcome.status === "fulfilled"
        ? { status: "up" }
        : {
            status: "down",
            message:
              outcome.reason instanceof Error ? outcome.reason.message : String(outcome.reason),
          };
    report.details[name] = entry;
    if (entry.status === "up") report.info[name] = entry;
    else {
      report.error[name] = entry;
      report.status = "error";
    }
  });
  return report;
}
