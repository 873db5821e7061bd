import { describe, expect, it } from "vitest";
import { archiveSettings, fileTarget } from "./archive-layout.ts";

const settings = (fileEvents: string, spread?: string) =>
  archiveSettings({
    USAGE_ARCHIVE_FILE_EVENTS: fileEvents,
    USAGE_ARCHIVE_SETTLE_SECONDS: "60",
    USAGE_RETENTION_DAYS: "35",
    ...(spread === undefined ? {} : { USAGE_ARCHIVE_FILE_SPREAD: spread }),
  } as Env);

const ids = Array.from({ length: 2_000 }, (_, i) => `0000019${i.toString(16).padStart(5, "0")}-e1`);

describe("archive file sizes", () => {
  it("spreads the sizes of full files evenly between (1 - spread) and the configured size", () => {
    const targets = ids.map((id) => fileTarget(settings("10000"), id));
    expect(Math.min(...targets)).toBeGreaterThanOrEqual(5_000);
    expect(Math.max(...targets)).toBeLessThanOrEqual(10_000);
    const mean = targets.reduce((sum, t) => sum + t, 0) / targets.length;
    expect(mean).toBeGreaterThan(7_250);
    expect(mean).toBeLessThan(7_750);
    // Each fifth of the range gets its share (ids that differ in one digit still spread).
    for (let band = 0; band < 5; band++) {
      const inBand = targets.filter((t) => t > 5_000 + band * 1_000 && t <= 6_000 + band * 1_000);
      expect(inBand.length).toBeGreaterThan(300);
    }
  });

  it("gives the same id the same size, so a file written again is the same file", () => {
    expect(fileTarget(settings("10000"), ids[7] ?? "")).toBe(
      fileTarget(settings("10000"), ids[7] ?? ""),
    );
  });

  it("writes files of exactly the configured size with a spread of 0", () => {
    expect(new Set(ids.map((id) => fileTarget(settings("200", "0"), id)))).toEqual(new Set([200]));
  });

  it("takes the default spread when none or a bad one is configured, and caps it", () => {
    expect(settings("10000").fileSpread).toBe(0.5);
    expect(settings("10000", "lots").fileSpread).toBe(0.5);
    expect(settings("10000", "-1").fileSpread).toBe(0.5);
    expect(settings("10000", "1").fileSpread).toBe(0.9);
    expect(fileTarget(settings("1", "0.9"), ids[3] ?? "")).toBe(1);
  });
});
