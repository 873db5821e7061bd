import { mkdtempSync, rmSync } from "node:fs";
import { createServer, type Server } from "node:http";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  appendRunRecord,
  CronExpressionError,
  CronRunner,
  type CronTrigger,
  cronMatches,
  cronTriggersOf,
  describeRun,
  devCronEnabled,
  fireTrigger,
  nextMinute,
  parseAt,
  parseCron,
  RunRecords,
  runLogEnd,
  runRecordIn,
  runRecordsSince,
  type ScheduledRunRecord,
  StackNotRunningError,
  scheduledUrl,
  startRunLog,
} from "./scheduled-work.ts";

const at = (iso: string) => new Date(iso);

describe("parseCron and cronMatches: five UTC fields", () => {
  it("* * * * * fires every minute", () => {
    const every = parseCron("* * * * *");
    expect(cronMatches(every, at("2026-11-25T16:05:00Z"))).toBe(true);
    expect(cronMatches(every, at("2027-02-28T23:59:30Z"))).toBe(true);
  });

  it("takes lists, ranges, steps and names", () => {
    const workHours = parseCron("*/15 9-17 * * MON-FRI");
    expect(cronMatches(workHours, at("2026-11-25T09:45:00Z"))).toBe(true); // a Wednesday
    expect(cronMatches(workHours, at("2026-11-25T09:46:00Z"))).toBe(false);
    expect(cronMatches(workHours, at("2026-11-25T18:00:00Z"))).toBe(false);
    expect(cronMatches(workHours, at("2026-11-28T10:00:00Z"))).toBe(false); // a Saturday
    const listed = parseCron("5/20 0,12 1 jan,Jul *");
    expect([...listed.minutes]).toEqual([5, 25, 45]);
    expect([...listed.hours]).toEqual([0, 12]);
    expect([...listed.months]).toEqual([1, 7]);
    expect(cronMatches(listed, at("2027-07-01T12:25:00Z"))).toBe(true);
    expect(cronMatches(listed, at("2027-08-01T12:25:00Z"))).toBe(false);
  });

  it("matches either day field when both are restricted, both otherwise", () => {
    const firstOrMonday = parseCron("0 0 1 * MON");
    expect(cronMatches(firstOrMonday, at("2026-12-01T00:00:00Z"))).toBe(true); // Tuesday the 1st
    expect(cronMatches(firstOrMonday, at("2026-11-30T00:00:00Z"))).toBe(true); // Monday the 30th
    expect(cronMatches(firstOrMonday, at("2026-12-02T00:00:00Z"))).toBe(false);
    const firstOnly = parseCron("0 0 1 * *");
    expect(cronMatches(firstOnly, at("2026-11-30T00:00:00Z"))).toBe(false);
  });

  it("refuses what it cannot run exactly, saying why", () => {
    expect(() => parseCron("* * * *")).toThrow(/has 4 fields; a Cron Trigger has 5/);
    expect(() => parseCron("60 * * * *")).toThrow(/minute 60 is outside 0-59/);
    expect(() => parseCron("0 0 * * 1")).toThrow(/SUN-SAT/);
    expect(() => parseCron("0 0 L * *")).toThrow(CronExpressionError);
    expect(() => parseCron("0 0 * * MON#1")).toThrow(CronExpressionError);
    expect(() => parseCron("10-5 * * * *")).toThrow(/runs backwards/);
    expect(() => parseCron("*/0 * * * *")).toThrow(/not a positive number/);
    expect(() => parseCron("* * * FOO *")).toThrow(/"FOO" is not a month/);
  });

  it("nextMinute is the next whole UTC minute", () => {
    expect(nextMinute(at("2026-11-25T16:05:00.000Z")).toISOString()).toBe(
      "2026-11-25T16:06:00.000Z",
    );
    expect(nextMinute(at("2026-11-25T23:59:59.999Z")).toISOString()).toBe(
      "2026-11-26T00:00:00.000Z",
    );
  });
});

describe("cronTriggersOf: the triggers the configs declare", () => {
  it("reads the project's configs with wrangler's reader: billing's every-minute trigger", async () => {
    const triggers = await cronTriggersOf([
      {
        name: "billing",
        url: "http://127.0.0.1:8787",
        configs: ["wrangler.toml", "workers/usage-consumer/wrangler.toml"],
      },
      { name: "aqi", url: "http://127.0.0.1:8788", configs: ["workers/aqi/wrangler.toml"] },
      {
        name: "portfolio",
        url: "http://127.0.0.1:8789",
        configs: ["workers/portfolio/wrangler.toml"],
      },
    ]);
    expect(
      triggers.map(({ worker, config, cron, url }) => ({ worker, config, cron, url })),
    ).toEqual([
      {
        worker: "billing",
        config: "wrangler.toml",
        cron: "* * * * *",
        url: "http://127.0.0.1:8787",
      },
    ]);
  }, 30_000);

  it("refuses a trigger of a worker that is not first in its process (it cannot be reached)", async () => {
    const read = (file: string) =>
      file.endsWith("b.toml") ? { name: "b", triggers: { crons: ["0 * * * *"] } } : { name: "a" };
    await expect(
      cronTriggersOf([{ name: "pair", url: "http://x", configs: ["a.toml", "b.toml"] }], read),
    ).rejects.toThrow(/b.toml declares Cron Triggers \(0 \* \* \* \*\), but only the first worker/);
  });

  it("reports an expression it cannot run", async () => {
    const read = () => ({ name: "a", triggers: { crons: ["0 0 * * 1"] } });
    await expect(
      cronTriggersOf([{ name: "a", url: "http://x", configs: ["a.toml"] }], read),
    ).rejects.toThrow(/SUN-SAT/);
  });
});

describe("fireTrigger: the local runtime's scheduled endpoint", () => {
  let server: Server;
  let url: string;
  const requests: string[] = [];
  let answer = { status: 200, body: '{"outcome":"ok"}' };

  beforeAll(async () => {
    server = createServer((request, response) => {
      requests.push(request.url ?? "");
      response.writeHead(answer.status).end(answer.body);
    });
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    const address = server.address();
    url = `http://127.0.0.1:${typeof address === "object" && address ? address.port : 0}`;
  });
  afterAll(() => new Promise((resolve) => server.close(resolve)));

  it("asks for the cron and the time in epoch milliseconds", async () => {
    answer = { status: 200, body: '{"outcome":"ok"}' };
    await fireTrigger({ url, cron: "* * * * *", worker: "billing" }, at("2027-01-01T00:01:00Z"));
    expect(requests.at(-1)).toBe(
      `/cdn-cgi/local/scheduled?cron=*+*+*+*+*&time=${Date.parse("2027-01-01T00:01:00Z")}&format=json`,
    );
    expect(scheduledUrl({ url, cron: "0 * * * *" }, at("2027-01-01T00:00:00Z"))).toBe(
      `${url}/cdn-cgi/local/scheduled?cron=0+*+*+*+*&time=1798761600000&format=json`,
    );
  });

  it("a handler that threw is an error naming the worker and cron", async () => {
    answer = { status: 500, body: '{"outcome":"exception"}' };
    await expect(
      fireTrigger({ url, cron: "* * * * *", worker: "billing" }, new Date()),
    ).rejects.toThrow(/scheduled handler of billing \(\* \* \* \* \*\) failed: 500/);
  });

  it("something else on the port is not taken for the stack", async () => {
    answer = { status: 404, body: "Not Found" };
    await expect(
      fireTrigger({ url, cron: "* * * * *", worker: "billing" }, new Date()),
    ).rejects.toThrow(StackNotRunningError);
  });

  it("no stack: says to start it", async () => {
    const closed = createServer();
    await new Promise<void>((resolve) => closed.listen(0, "127.0.0.1", resolve));
    const address = closed.address();
    const port = typeof address === "object" && address ? address.port : 0;
    await new Promise((resolve) => closed.close(resolve));
    const error = await fireTrigger(
      { url: `http://127.0.0.1:${port}`, cron: "* * * * *", worker: "billing" },
      new Date(),
    ).catch((caught: unknown) => caught);
    expect(error).toBeInstanceOf(StackNotRunningError);
    expect(String(error)).toMatch(/nothing answers on http:\/\/127\.0\.0\.1:\d+ \(ECONNREFUSED\)/);
    expect(String(error)).toContain("npm run dev");
  });
});

const record: ScheduledRunRecord = {
  level: "info",
  msg: "scheduled run",
  cron: "* * * * *",
  scheduledTime: "2027-01-01T00:01:00.000Z",
  durationMs: 812,
  periodsClosed: 2,
  finalInvoices: 1,
  paymentsAttempted: 3,
  tenantEventsSent: 4,
  usageEventsArchived: 0,
  trialsEnded: 0,
  paymentRetries: 1,
  failedTasks: [],
};

describe("what a run did", () => {
  it("finds the run record in a line of the runtime's output", () => {
    expect(runRecordIn(JSON.stringify(record))).toEqual(record);
    expect(runRecordIn(`[billing] ${JSON.stringify(record)}`)).toEqual(record);
    expect(runRecordIn('{"level":"info","msg":"subscription jobs"}')).toBeUndefined();
    expect(runRecordIn('{"msg":"scheduled run", broken')).toBeUndefined();
    expect(runRecordIn("[wrangler:info] GET /health 200 OK")).toBeUndefined();
  });

  it("describes it in one line: the main counts always, the others when not zero", () => {
    expect(describeRun(record)).toBe(
      '2027-01-01T00:01:00.000Z "* * * * *" in 812 ms: periods closed 2, final invoices 1, payments attempted 3, events sent 4, usage events archived 0, payment retries 1',
    );
    expect(describeRun({ ...record, level: "error", failedTasks: ["usageArchive"] })).toMatch(
      /, FAILED: usageArchive$/,
    );
  });

  it("RunRecords hands a record to whoever waits for its cron and time", async () => {
    const records = new RunRecords();
    const waited = records.waitFor("* * * * *", at("2027-01-01T00:01:00Z"), 5000);
    const other = records.waitFor("* * * * *", at("2027-01-01T00:02:00Z"), 50);
    expect(records.see(`[billing] ${JSON.stringify(record)}`)).toEqual(record);
    expect(await waited).toEqual(record);
    expect(await other).toBeUndefined();
  });

  it("the run log gives the records written after a point", () => {
    const dir = mkdtempSync(path.join(tmpdir(), "run-log-"));
    try {
      const file = path.join(dir, "scheduled-runs.ndjson");
      expect(runLogEnd(file)).toBe(0);
      expect(runRecordsSince(file, 0)).toEqual([]);
      appendRunRecord(file, { ...record, scheduledTime: "2027-01-01T00:00:00.000Z" });
      const from = runLogEnd(file);
      appendRunRecord(file, record);
      expect(runRecordsSince(file, from)).toEqual([record]);
      expect(runRecordsSince(file, 0)).toHaveLength(2);
      startRunLog(file);
      expect(runLogEnd(file)).toBe(0);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

/** A clock and timers the test moves by hand. */
function fakeTime(start: string) {
  let now = Date.parse(start);
  let timers: { due: number; run: () => void }[] = [];
  return {
    now: () => new Date(now),
    setTimer: (run: () => void, ms: number) => {
      const timer = { due: now + ms, run };
      timers.push(timer);
      return timer;
    },
    clearTimer: (timer: unknown) => {
      timers = timers.filter((t) => t !== timer);
    },
    /** Moves the clock to `iso`, running the timers due by then. */
    advanceTo(iso: string) {
      const to = Date.parse(iso);
      for (;;) {
        const next = timers.filter((t) => t.due <= to).sort((a, b) => a.due - b.due)[0];
        if (!next) break;
        timers = timers.filter((t) => t !== next);
        now = next.due;
        next.run();
      }
      now = to;
    },
    pending: () => timers.length,
  };
}

function trigger(cron: string): CronTrigger {
  return { worker: "billing", config: "wrangler.toml", cron, schedule: parseCron(cron), url: "" };
}

const flush = () => new Promise((resolve) => setImmediate(resolve));

describe("CronRunner: on schedule, one run at a time", () => {
  it("fires each due trigger at every whole minute, with that minute as the time", async () => {
    const time = fakeTime("2026-11-25T16:04:31.500Z");
    const fired: string[] = [];
    const runner = new CronRunner({
      triggers: [trigger("* * * * *"), trigger("0 * * * *")],
      fire: async (t, when) => {
        fired.push(`${t.cron} @ ${when.toISOString()}`);
      },
      log: () => undefined,
      ...time,
    });
    runner.start();
    // Minute by minute, each run finishing before the next minute comes.
    for (
      let minute = Date.parse("2026-11-25T16:05:00.000Z");
      minute <= Date.parse("2026-11-25T17:00:00.000Z");
      minute += 60_000
    ) {
      time.advanceTo(new Date(minute + 10_000).toISOString());
      await flush();
    }
    await runner.stop();
    expect(fired[0]).toBe("* * * * * @ 2026-11-25T16:05:00.000Z");
    // Each minute once, the hourly trigger at 17:00 only.
    expect(fired.filter((line) => line.startsWith("* * * * *"))).toHaveLength(56);
    expect(fired.filter((line) => line.startsWith("0 * * * *"))).toEqual([
      "0 * * * * @ 2026-11-25T17:00:00.000Z",
    ]);
  });

  it("skips a minute that comes while a run is still going, and says so", async () => {
    const time = fakeTime("2026-11-25T16:04:59.000Z");
    const logged: string[] = [];
    const fired: string[] = [];
    let finish = () => {};
    const runner = new CronRunner({
      triggers: [trigger("* * * * *")],
      fire: (_, when) => {
        fired.push(when.toISOString());
        return new Promise<void>((resolve) => {
          finish = resolve;
        });
      },
      log: (line) => logged.push(line),
      ...time,
    });
    runner.start();
    time.advanceTo("2026-11-25T16:05:00.000Z");
    expect(runner.busy).toBe(true);
    time.advanceTo("2026-11-25T16:06:00.000Z");
    expect(fired).toEqual(["2026-11-25T16:05:00.000Z"]);
    expect(logged).toEqual([
      "2026-11-25T16:06:00.000Z: skipped, the previous run is still going (runs never overlap)",
    ]);
    finish();
    await flush();
    expect(runner.busy).toBe(false);
    time.advanceTo("2026-11-25T16:07:00.000Z");
    expect(fired).toEqual(["2026-11-25T16:05:00.000Z", "2026-11-25T16:07:00.000Z"]);
    finish();
    await runner.stop();
  });

  it("a run cut short by stopping is not reported as a failure", async () => {
    const time = fakeTime("2026-11-25T16:04:59.000Z");
    const logged: string[] = [];
    let fail = (_: Error) => {};
    const runner = new CronRunner({
      triggers: [trigger("* * * * *")],
      fire: () =>
        new Promise<void>((_, reject) => {
          fail = reject;
        }),
      log: (line) => logged.push(line),
      ...time,
    });
    runner.start();
    time.advanceTo("2026-11-25T16:05:00.000Z");
    const stopping = runner.stop();
    fail(new StackNotRunningError("nothing answers"));
    await stopping;
    expect(logged).toEqual([]);
  });

  it("logs a failed run and keeps going", async () => {
    const time = fakeTime("2026-11-25T16:04:59.000Z");
    const logged: string[] = [];
    let calls = 0;
    const runner = new CronRunner({
      triggers: [trigger("* * * * *")],
      fire: async () => {
        calls++;
        if (calls === 1) throw new StackNotRunningError("nothing answers");
      },
      log: (line) => logged.push(line),
      ...time,
    });
    runner.start();
    time.advanceTo("2026-11-25T16:05:00.000Z");
    await flush();
    time.advanceTo("2026-11-25T16:06:00.000Z");
    await flush();
    await runner.stop();
    expect(calls).toBe(2);
    expect(logged).toEqual([
      '2026-11-25T16:05:00.000Z "* * * * *" on billing failed: nothing answers',
    ]);
  });

  it("stop() fires nothing more and waits for the run under way", async () => {
    const time = fakeTime("2026-11-25T16:04:59.000Z");
    let finish = () => {};
    let fired = 0;
    const runner = new CronRunner({
      triggers: [trigger("* * * * *")],
      fire: () => {
        fired++;
        return new Promise<void>((resolve) => {
          finish = resolve;
        });
      },
      log: () => undefined,
      ...time,
    });
    runner.start();
    time.advanceTo("2026-11-25T16:05:00.000Z");
    let stopped = false;
    const stopping = runner.stop().then(() => {
      stopped = true;
    });
    await flush();
    expect(stopped).toBe(false);
    expect(time.pending()).toBe(0);
    finish();
    await stopping;
    expect(stopped).toBe(true);
    time.advanceTo("2026-11-25T16:10:00.000Z");
    expect(fired).toBe(1);
  });
});

describe("the switches", () => {
  it("DEV_CRON is on unless turned off, and a typo is an error", () => {
    expect(devCronEnabled(undefined)).toBe(true);
    expect(devCronEnabled("")).toBe(true);
    expect(devCronEnabled("on")).toBe(true);
    expect(devCronEnabled("off")).toBe(false);
    expect(devCronEnabled("OFF")).toBe(false);
    expect(devCronEnabled("0")).toBe(false);
    expect(() => devCronEnabled("of")).toThrow(/DEV_CRON must be "on" or "off", not "of"/);
  });

  it("--at takes ISO times with a zone, or a date (midnight UTC)", () => {
    expect(parseAt("2027-01-01T00:01:00Z").toISOString()).toBe("2027-01-01T00:01:00.000Z");
    expect(parseAt("2027-01-01T02:01:00+02:00").toISOString()).toBe("2027-01-01T00:01:00.000Z");
    expect(parseAt("2027-01-01T00:01Z").toISOString()).toBe("2027-01-01T00:01:00.000Z");
    expect(parseAt("2027-01-01").toISOString()).toBe("2027-01-01T00:00:00.000Z");
    for (const bad of ["2027-01-01T00:01:00", "2027-02-30", "tomorrow", "1798761660000", ""])
      expect(() => parseAt(bad), bad).toThrow(/is not an ISO 8601 time with its zone/);
  });
});
