import { execFileSync } from "node:child_process";
import { describe, expect, it } from "vitest";
import { measureExternalBaseline } from "./external-baseline.ts";

/** The baseline servers running now (this file's path in their command line). */
function baselineServers(): string[] {
  return execFileSync("ps", ["-e", "-o", "pid=,args="], { encoding: "utf8" })
    .split("\n")
    .filter((line) => line.includes("bench/lib/baseline-server.ts"));
}

describe("measureExternalBaseline", () => {
  it("measures a server in a process of its own and stops it again", async () => {
    const before = baselineServers().length;
    const baseline = await measureExternalBaseline({
      seconds: 1,
      connections: 4,
      warmUpSeconds: 1,
    });
    expect(baseline.rps).toBeGreaterThan(100);
    expect(baseline).toMatchObject({ seconds: 1, connections: 4 });
    expect(baseline.p99).toBeGreaterThanOrEqual(baseline.p50);
    expect(baselineServers()).toHaveLength(before);
  }, 20_000);
});
