import type { RedriveResult } from "../services/usage-redrive.ts";
import type { SweepResult, UsageOutboxPublisher } from "./usage-outbox-publisher.ts";

/** The one publisher of the usage outbox. */
export function usageOutboxPublisher(namespace: DurableObjectNamespace<UsageOutboxPublisher>) {
  const stub = namespace.get(namespace.idFromName("usage-outbox"));
  return {
    arm: (): Promise<void> => stub.arm(),
    ensureRunning: (): Promise<boolean> => stub.ensureRunning(),
    sweep: (nowMs?: number): Promise<SweepResult> => stub.sweep({ nowMs }),
    redrive: (nowMs?: number): Promise<RedriveResult> => stub.redrive({ nowMs }),
  };
}
