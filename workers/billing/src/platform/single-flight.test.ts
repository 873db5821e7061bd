import { describe, expect, it } from "vitest";
import { SingleFlight } from "./single-flight.ts";

describe("SingleFlight", () => {
  it("never overlaps runs, and a caller arriving mid-run gets a run of its own", async () => {
    const flight = new SingleFlight<number>();
    const events: string[] = [];
    let release!: () => void;
    const gate = new Promise<void>((resolve) => (release = resolve));
    const first = flight.run(async () => {
      events.push("first:start");
      await gate;
      events.push("first:end");
      return 1;
    });
    const second = flight.run(async () => {
      events.push("second:start");
      return 2;
    });
    await Promise.resolve();
    expect(events).toEqual(["first:start"]);
    release();
    expect(await Promise.all([first, second])).toEqual([1, 2]);
    expect(events).toEqual(["first:start", "first:end", "second:start"]);
  });

  it("a failed run does not block the next one", async () => {
    const flight = new SingleFlight<string>();
    const failed = flight.run(async () => {
      throw new Error("boom");
    });
    const next = flight.run(async () => "ok");
    await expect(failed).rejects.toThrow("boom");
    expect(await next).toBe("ok");
  });
});
