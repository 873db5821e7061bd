/**
 * The chat page in headless Chromium (Debian's chromium + playwright-core):
 * ask a question, watch the answer stream in, see its sources; ask about
 * something the portfolio never mentions and see a plain decline without a
 * sources line.
 */
import type { BrowserContext } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  type Browser,
  launchChromium,
  skipBrowserTests,
} from "../../../../e2e/browser/chromium.ts";
import { type LocalWorker, startPortfolioWorker } from "./local-worker.ts";

describe.skipIf(skipBrowserTests)("chat page in Chromium", () => {
  let worker: LocalWorker;
  let chromium: Browser;
  let browser: BrowserContext;

  beforeAll(async () => {
    worker = await startPortfolioWorker();
    chromium = await launchChromium();
    browser = chromium.context;
  }, 120_000);

  afterAll(async () => {
    await chromium?.close();
    await worker?.stop();
  });

  it("streams an answer with its sources; declines plainly, without a sources line", async () => {
    const page = await browser.newPage();
    const problems: string[] = [];
    page.on("console", (message) => {
      if (message.type() === "error") problems.push(message.text());
    });
    page.on("pageerror", (error) => problems.push(error.message));
    await page.goto(worker.url);
    await expect(page.title()).resolves.toBe("Ask Avery");

    // Count DOM mutations: the page appends each token event as it is parsed.
    await page.evaluate(() => {
      const state = window as unknown as { textChanges: number };
      state.textChanges = 0;
      new MutationObserver((records) => {
        state.textChanges += records.length;
      }).observe(document.getElementById("log")!, {
        subtree: true,
        characterData: true,
        childList: true,
      });
    });
    await page.fill("#question", "What projects has Avery built?");
    await page.click("#send");
    const answer = page.locator("article.answer").first();
    await answer.locator("footer").waitFor({ timeout: 30_000 });
    await expect(answer.getAttribute("data-done")).resolves.toBe("true");

    const text = (await answer.locator("p").textContent()) ?? "";
    expect(text).toMatch(/Avery has built projects like/);
    expect(text).toMatch(/Ask Avery|Signal Canvas|Checkout Orbit|Tidepool CLI/);
    const sources = await answer.locator(".sources li").allTextContents();
    expect(sources.length).toBeGreaterThan(0);
    expect(
      sources.some((title) => /Ask Avery|Signal Canvas|Checkout Orbit|Tidepool CLI/.test(title)),
    ).toBe(true);
    const changes = await page.evaluate(
      () => (window as unknown as { textChanges: number }).textChanges,
    );
    // At least one mutation per streamed token (plus the question bubble and the footer).
    expect(changes).toBeGreaterThan(10);
    expect(problems, problems.join("\n")).toEqual([]);

    // A second, identical question comes from the cache.
    await page.fill("#question", "What projects has Avery built?");
    await page.click("#send");
    const second = page.locator("article.answer").nth(1);
    await second.locator("footer").waitFor({ timeout: 30_000 });
    await expect(second.locator(".timing").textContent()).resolves.toMatch(/^cached · /);
    await expect(second.locator("p").textContent()).resolves.toBe(text);

    // Something the portfolio never mentions: a plain decline, with no sources line.
    await page.fill("#question", "Has Avery used Kubernetes?");
    await page.click("#send");
    const declined = page.locator("article.answer").nth(2);
    await declined.locator("footer").waitFor({ timeout: 30_000 });
    const declinedText = (await declined.locator("p").textContent()) ?? "";
    expect(declinedText).toMatch(
      /^No, not according to the portfolio: the portfolio doesn't mention Kubernetes\./,
    );
    expect(await declined.locator(".sources").count()).toBe(0);
    await expect(declined.locator("footer").textContent()).resolves.not.toContain("Sources");
    await expect(declined.getAttribute("class")).resolves.toContain("unsupported");
    // A stated fact keeps its source.
    await page.fill("#question", "When did Avery start at Northwind Health?");
    await page.click("#send");
    const fact = page.locator("article.answer").nth(3);
    await fact.locator("footer").waitFor({ timeout: 30_000 });
    await expect(fact.locator("p").textContent()).resolves.toContain("since 2021");
    await expect(fact.locator(".sources li").allTextContents()).resolves.toContain(
      "Resume: Staff Engineer at Northwind Health",
    );
    expect(problems, problems.join("\n")).toEqual([]);
  }, 90_000);
});
