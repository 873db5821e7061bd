/**
 * The billing console in headless Chromium against the whole local stack
 * (`npm run dev` on free ports): a tenant owner and a platform
 * administrator go through every screen doing the real thing: keys,
 * usage that moves the chart, alerts, a webhook endpoint that receives a
 * delivery, settlement that finalizes an invoice whose PDF is downloaded
 * and read, prepaid credit bought on the overview and paid for. Every
 * request the browser makes must stay on this machine, no page may log an
 * error, and axe finds no serious or critical accessibility violation on
 * any screen.
 *
 * With SCREENSHOTS=<dir> (npm run screenshots) it also saves a PNG of each
 * main screen there.
 */
import { mkdirSync, readFileSync } from "node:fs";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import path from "node:path";
import type { BrowserContext, Page } from "playwright-core";
import { extractText, getDocumentProxy } from "unpdf";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type RunningStack, startStack } from "../../scripts/lib/stack.ts";
import { seriousAxeFindings } from "./axe.ts";
import { type Browser, launchChromium, skipBrowserTests } from "./chromium.ts";

const ADMIN = { email: "admin@example.dev", password: "DevAdmin2026!" };
const PASSWORD = "Console2026!";
const screenshotDir = process.env.SCREENSHOTS ? path.resolve(process.env.SCREENSHOTS) : undefined;

interface Receiver {
  url: string;
  received: { type: string; id: string }[];
  close(): Promise<void>;
}

/** A local webhook receiver that answers 200 to everything it is sent. */
async function startReceiver(): Promise<Receiver> {
  const received: Receiver["received"] = [];
  const server: Server = createServer((request, response) => {
    let body = "";
    request.on("data", (chunk) => (body += chunk));
    request.on("end", () => {
      try {
        const event = JSON.parse(body) as { type: string; id: string };
        received.push({ type: event.type, id: event.id });
      } catch {
        // Not an event: still answered.
      }
      response.writeHead(200).end("ok");
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}/hooks/billing`,
    received,
    close: () => new Promise((resolve) => server.close(() => resolve())),
  };
}

async function until<T>(what: string, probe: () => Promise<T | undefined>, timeoutMs = 30_000) {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await probe();
    if (value !== undefined) return value;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 500));
  }
}

describe.skipIf(skipBrowserTests)("billing console in Chromium", () => {
  let stack: RunningStack;
  let chromium: Browser;
  let browser: BrowserContext;
  let receiver: Receiver;
  let base: string;
  /** Requests the guard stopped from leaving the machine. */
  const outside: string[] = [];
  const problems: string[] = [];
  const axeFindings: string[] = [];
  /** The questions confirm() asked, in order. */
  const dialogs: string[] = [];

  async function api(
    pathname: string,
    init: { method?: string; body?: unknown; token?: string; tenant?: string } = {},
  ) {
    const headers: Record<string, string> = { "content-type": "application/json" };
    if (init.token) headers.authorization = `Bearer ${init.token}`;
    if (init.tenant) headers["x-tenant-id"] = init.tenant;
    const response = await fetch(`${base}/api/v1${pathname}`, {
      method: init.method ?? (init.body === undefined ? "GET" : "POST"),
      headers,
      body: init.body === undefined ? undefined : JSON.stringify(init.body),
    });
    // biome-ignore lint/suspicious/noExplicitAny: test-side JSON bodies
    return { status: response.status, body: (await response.json()) as any };
  }

  /** axe on the page as it is now; and a screenshot when asked for. */
  async function checkScreen(page: Page, name: string, screenshot = true) {
    // The icon is inline, so the browser asks for no /favicon.ico.
    await expect(page.locator('link[rel="icon"]').getAttribute("href"), name).resolves.toMatch(
      /^data:image\/svg\+xml,/,
    );
    axeFindings.push(...(await seriousAxeFindings(page, name)));
    if (screenshotDir && screenshot) {
      mkdirSync(screenshotDir, { recursive: true });
      await page.screenshot({ path: path.join(screenshotDir, `${name}.png`), fullPage: true });
    }
  }

  /** Nothing wider than the window; on wide screens the sidebar runs to the bottom of the page. */
  async function checkLayout(page: Page, name: string) {
    // A string, as the other in-page probes: the test's TypeScript has no DOM types.
    const layout = await page.evaluate<{
      overflow: number;
      pageHeight: number;
      sidebarBottom: number | null;
      menuHeight: number | null;
      scrollY: number;
    }>(`(() => {
      const sidebar = document.querySelector("nav.sidebar");
      const menu = document.querySelector(".phone-menu summary");
      const shown = (element) => element !== null && getComputedStyle(element).display !== "none";
      return {
        overflow: document.documentElement.scrollWidth - window.innerWidth,
        pageHeight: document.documentElement.scrollHeight,
        sidebarBottom: shown(sidebar) ? sidebar.getBoundingClientRect().bottom : null,
        menuHeight: menu && shown(menu.parentElement) ? menu.getBoundingClientRect().height : null,
        scrollY: window.scrollY,
      };
    })()`);
    expect(layout.overflow, `${name}: horizontal overflow`).toBeLessThanOrEqual(0);
    if (layout.sidebarBottom !== null && layout.sidebarBottom !== undefined) {
      expect(
        layout.sidebarBottom + layout.scrollY,
        `${name}: sidebar bottom`,
      ).toBeGreaterThanOrEqual(layout.pageHeight - 1);
    } else {
      // A phone: the navigation is one line until opened.
      expect(layout.menuHeight, `${name}: menu line`).toBeLessThanOrEqual(60);
    }
  }

  /**
   * Chart text readable (at least 11 px on screen), time labels on whole
   * hours (and on midnights when `days`), y ticks round.
   */
  async function checkChart(page: Page, days: boolean) {
    const chart = await page.evaluate<
      { className: string; start: string | null; value: string | null; label: string; px: number }[]
    >(`[...document.querySelectorAll("svg.chart text")]
      .filter((text) => getComputedStyle(text).display !== "none")
      .map((text) => ({
        className: text.getAttribute("class") || "",
        start: text.getAttribute("data-start"),
        value: text.getAttribute("data-value"),
        label: text.textContent || "",
        px: (text.getScreenCTM()?.a ?? 0) * Number.parseFloat(getComputedStyle(text).fontSize),
      }))`);
    const xTicks = chart.filter((text) => text.className.includes("x-tick"));
    const yTicks = chart.filter((text) => text.className.includes("y-tick"));
    expect(xTicks.length).toBeGreaterThanOrEqual(3);
    expect(yTicks.length).toBeGreaterThanOrEqual(3);
    expect(yTicks.length).toBeLessThanOrEqual(5);
    for (const text of chart) expect(text.px, text.label).toBeGreaterThanOrEqual(11);
    for (const tick of xTicks) {
      const start = new Date(tick.start ?? "");
      expect(start.getUTCMinutes() + start.getUTCSeconds(), tick.label).toBe(0);
      if (days) expect(start.getUTCHours(), tick.label).toBe(0);
    }
    // Round: a step of 1, 2 or 5 times a power of ten, from 0.
    const values = yTicks.map((tick) => Number(tick.value)).sort((a, b) => a - b);
    const step = values[1] ?? 0;
    expect(String(step)).toMatch(/^[125]0*$/);
    expect(values).toEqual(values.map((_, index) => index * step));
  }

  async function go(page: Page, link: string, heading: string | RegExp) {
    await page
      .getByRole("navigation", { name: "Console" })
      .getByRole("link", { name: link, exact: true })
      .click();
    await expect(page.getByRole("heading", { level: 1 }).textContent()).resolves.toMatch(heading);
  }

  async function signIn(page: Page, email: string, password: string) {
    await page.goto(`${base}/console/overview`);
    await page.waitForURL(/\/console\/login/);
    await page.getByLabel("Email").fill(email);
    await page.getByLabel("Password").fill(password);
    await page.getByRole("button", { name: "Sign in" }).click();
    await page.waitForURL(/\/console\/overview/);
  }

  async function signOut(page: Page) {
    await page.getByRole("button", { name: "Sign out" }).click();
    await page.getByText("You are signed out").waitFor();
  }

  beforeAll(async () => {
    [stack, receiver] = await Promise.all([startStack({ timeoutMs: 150_000 }), startReceiver()]);
    // Chromium accepts Secure cookies from http://localhost (a secure context).
    base = stack.billingUrl.replace("127.0.0.1", "localhost");
    chromium = await launchChromium();
    browser = chromium.context;
    await browser.route("**/*", (route) => {
      const host = new URL(route.request().url()).hostname;
      if (host === "localhost" || host === "127.0.0.1") return route.continue();
      outside.push(route.request().url());
      return route.abort();
    });
  }, 180_000);

  afterAll(async () => {
    await chromium?.close();
    await receiver?.close();
    await stack?.stop();
  });

  it("a tenant owner and a platform administrator go through every screen", async () => {
    // A new customer: registered, on the Pro plan's annual price (no trial), two tenants.
    const slug = `console-${crypto.randomUUID().slice(0, 8)}`;
    const registered = await api("/auth/register", {
      body: {
        email: `${slug}@example.com`,
        password: PASSWORD,
        firstName: "Casey",
        lastName: "Owner",
        tenantName: "Console Labs",
        tenantSlug: slug,
      },
    });
    expect(registered.status, JSON.stringify(registered.body)).toBe(201);
    const owner = {
      email: `${slug}@example.com`,
      token: registered.body.accessToken as string,
      tenantId: registered.body.tenant.id as string,
    };
    const plans = await api("/plans");
    const pro = plans.body.data.find((plan: { slug: string }) => plan.slug === "pro");
    const annual = pro.prices.find((price: { interval: string }) => price.interval === "ANNUALLY");
    const subscribed = await api("/subscriptions", {
      token: owner.token,
      tenant: owner.tenantId,
      body: { planId: pro.id, priceId: annual.id },
    });
    expect(subscribed.status, JSON.stringify(subscribed.body)).toBe(201);
    const second = await api("/tenants", {
      token: owner.token,
      body: { name: "Console Side Project", slug: `${slug}-side` },
    });
    expect(second.status).toBe(201);

    const page = await browser.newPage();
    page.on("console", (message) => {
      if (message.type() === "error") problems.push(`${page.url()}: ${message.text()}`);
    });
    page.on("pageerror", (error) => problems.push(`${page.url()}: ${error.message}`));
    page.on("requestfailed", (request) => {
      // ERR_ABORTED is the browser dropping a request of a page it navigated away from.
      if (request.failure()?.errorText === "net::ERR_ABORTED") return;
      if (!outside.includes(request.url()))
        problems.push(`${request.url()}: ${request.failure()?.errorText}`);
    });
    page.on("dialog", (dialog) => {
      dialogs.push(dialog.message());
      void dialog.accept();
    });
    try {
      await ownerAndOperator(page, owner, slug);
    } catch (error) {
      // What the page said when it went wrong, for the CI log.
      console.error(
        `[console test] failed at ${page.url()}:\n${await page
          .locator("main")
          .textContent()
          .catch(() => "")}`,
      );
      throw error;
    }
    // All three at once, so one run shows every kind of finding.
    expect({ outside, problems, axeFindings }).toEqual({
      outside: [],
      problems: [],
      axeFindings: [],
    });
  }, 170_000);

  async function ownerAndOperator(page: Page, owner: { email: string }, slug: string) {
    await page.setViewportSize({ width: 1280, height: 860 });

    // ---- sign-in: the session cookies are HttpOnly, Secure, SameSite=Strict
    await page.goto(`${base}/console/login`);
    await checkScreen(page, "sign-in", false);
    await signIn(page, owner.email, PASSWORD);
    const cookies = await browser.cookies(`${base}/console/overview`);
    const session = cookies.filter((cookie) => cookie.name.startsWith("console_"));
    expect(session.map((cookie) => cookie.name).sort()).toEqual(
      ["console_access", "console_csrf", "console_refresh", "console_tenant"].sort(),
    );
    for (const cookie of session) {
      expect(cookie).toMatchObject({
        httpOnly: true,
        secure: true,
        sameSite: "Strict",
        path: "/console",
      });
    }
    expect(await page.evaluate("document.cookie")).toBe("");
    expect(await page.evaluate("localStorage.length + sessionStorage.length")).toBe(0);

    // ---- tenant switcher: the newest membership comes first, a tenant with nothing yet
    await expect(page.getByRole("heading", { level: 1 }).textContent()).resolves.toBe("Overview");
    await page.getByText("This tenant has no subscription yet").waitFor();
    await page.getByLabel("Tenant").selectOption({ label: "Console Labs (OWNER)" });
    await page.waitForURL(/notice=tenant-switched/);

    // ---- overview
    await page.getByText("Pro", { exact: true }).waitFor();
    await page.getByText("api_calls").first().waitFor();
    await checkScreen(page, "overview-new", false);

    // Keyboard: the skip link comes first, then the header's controls and the navigation.
    await page.keyboard.press("Tab");
    await expect(page.evaluate("document.activeElement?.textContent")).resolves.toBe(
      "Skip to content",
    );

    // ---- API keys: create (shown once, copy button), used below, one revoked
    await go(page, "API keys", "API keys");
    await page.getByLabel("Name").fill("ingestion server");
    await page.getByRole("button", { name: "Create key" }).click();
    const rawKey = (await page.locator("#new-key").textContent())?.trim() ?? "";
    expect(rawKey).toMatch(/^mk_/);
    await browser.grantPermissions(["clipboard-read", "clipboard-write"], { origin: base });
    await page.getByRole("button", { name: "Copy", exact: true }).click();
    await page.getByText("Copied to the clipboard.").waitFor();
    await expect(page.locator("#new-key-curl").textContent()).resolves.toContain(
      `authorization: Bearer ${rawKey}`,
    );
    await checkScreen(page, "api-keys");
    await page.goto(`${base}/console/keys`);
    await page.getByLabel("Name").fill("to be revoked");
    await page.getByRole("button", { name: "Create key" }).click();
    await page.locator("#new-key").waitFor();
    await page.goto(`${base}/console/keys`);
    await page.getByRole("button", { name: "Revoke to be revoked" }).click();
    await page.getByText("The key is revoked").waitFor();
    await expect(page.getByRole("row", { name: /to be revoked/ }).textContent()).resolves.toContain(
      "REVOKED",
    );

    // ---- webhooks: an endpoint at a local receiver, secret shown once
    await go(page, "Webhooks", "Webhooks");
    await page.getByLabel("URL").fill(receiver.url);
    await page.getByLabel("Description (optional)").fill("local receiver");
    await page.getByRole("button", { name: "Register endpoint" }).click();
    await expect(page.locator("#endpoint-secret").textContent()).resolves.toMatch(/^whsec_/);
    await checkScreen(page, "webhooks");

    // ---- alerts: fires at 5 units of api_calls
    await go(page, "Usage alerts", "Usage alerts");
    await page.getByLabel("Feature").selectOption("api_calls");
    await page.getByLabel("Threshold in").selectOption("units");
    await page.getByLabel("Threshold", { exact: true }).fill("5");
    await page.getByRole("button", { name: "Add alert" }).click();
    await page.getByText("The alert is saved").waitFor();
    await checkScreen(page, "alerts");

    // ---- usage: the chart moves when the key reports usage
    await go(page, "Usage", "Usage");
    const total = async () => Number(await page.locator("svg.chart").getAttribute("data-total"));
    expect(await total()).toBe(0);
    await checkScreen(page, "usage-empty", false);
    const eventIds = [crypto.randomUUID(), crypto.randomUUID()];
    const sent = await fetch(`${base}/api/v1/usage/events`, {
      method: "POST",
      headers: { authorization: `Bearer ${rawKey}`, "content-type": "application/json" },
      body: JSON.stringify({
        events: eventIds.map((eventId, index) => ({
          eventId,
          feature: "api_calls",
          amount: 3 + index * 4,
          timestamp: new Date().toISOString(),
        })),
      }),
    });
    expect(sent.status).toBe(202);
    await until("the chart to show the new usage", async () => {
      await page.reload();
      return (await total()) === 10 ? true : undefined;
    });
    await expect(
      page.getByRole("heading", { name: /\(api_calls\): 10 units$/ }).count(),
    ).resolves.toBe(1);
    // The picker names features; the key the API takes is beside the name.
    await expect(page.locator("#feature option:checked").textContent()).resolves.toMatch(
      /^.+ \(api_calls\)$/,
    );
    for (const eventId of eventIds) await page.getByText(eventId).waitFor();
    // Latest events are in the order the caption says: newest received first.
    const received = await page
      .getByRole("region", { name: /most recently received/ })
      .locator("tbody tr td:first-child")
      .allTextContents();
    expect(received.length).toBeGreaterThanOrEqual(2);
    expect([...received].sort().reverse()).toEqual(received);
    await checkChart(page, false);
    for (const [range, days] of [
      ["7d", true],
      ["30d", true],
    ] as const) {
      await page.getByLabel("Range").selectOption(range);
      await page.getByRole("button", { name: "Show" }).click();
      await page.waitForURL(new RegExp(`range=${range}`));
      expect(await total()).toBe(10);
      await checkChart(page, days);
    }
    await page.goto(`${base}/console/usage`);
    await checkScreen(page, "usage");

    // ---- overview: the usage and the fired alert
    await go(page, "Overview", "Overview");
    await page.getByText(/10 used of 100,000 included/).waitFor();
    await page.getByText(/reached 5 units/).waitFor();
    await checkScreen(page, "overview");

    // ---- the webhook delivery of usage.threshold_reached, resent; secret rotated
    await until("the receiver to get the threshold event", async () =>
      receiver.received.some((event) => event.type === "usage.threshold_reached")
        ? true
        : undefined,
    );
    await go(page, "Webhooks", "Webhooks");
    await page.getByRole("link", { name: receiver.url }).click();
    await until("the delivery to show as delivered", async () => {
      await page.reload();
      const row = page.getByRole("row", { name: /usage\.threshold_reached/ });
      return (await row.count()) > 0 && /DELIVERED/.test((await row.first().textContent()) ?? "")
        ? true
        : undefined;
    });
    await checkScreen(page, "webhook-deliveries");
    const before = receiver.received.length;
    await page
      .getByRole("button", { name: /Resend usage\.threshold_reached/ })
      .first()
      .click();
    await page.getByText("The delivery is queued again").waitFor();
    await until("the resent delivery to arrive", async () =>
      receiver.received.length > before ? true : undefined,
    );
    await page.getByRole("button", { name: "Rotate secret" }).click();
    await expect(page.locator("#rotated-secret").textContent()).resolves.toMatch(/^whsec_/);
    await page.getByText(/signs too until/).waitFor();
    const beforeExample = receiver.received.length;
    await page.getByRole("button", { name: "Send test event" }).click();
    await page.getByText("A webhook.test event is queued").waitFor();
    await until("the test event to arrive", async () =>
      receiver.received.slice(beforeExample).some((event) => event.type === "webhook.test")
        ? true
        : undefined,
    );

    // ---- members, invoices (none yet), audit log filtered
    await go(page, "Members", "Members");
    await page.getByRole("cell", { name: owner.email }).waitFor();
    await checkScreen(page, "members");
    await go(page, "Invoices", "Invoices");
    await page.getByText("No invoice yet").waitFor();
    await go(page, "Audit log", "Audit log");
    await page.getByLabel("Action").fill("api_key.revoked");
    await page.getByRole("button", { name: "Filter" }).click();
    await page.waitForURL(/action=api_key\.revoked/);
    await expect(page.locator("tbody tr").count()).resolves.toBe(1);
    await checkScreen(page, "audit-log");
    await page.getByLabel("Action").fill("no.such_action");
    await page.getByRole("button", { name: "Filter" }).click();
    await page.getByText("The filter is not valid").waitFor();
    await page.goBack();
    await page.waitForURL(/action=api_key\.revoked/);

    // ---- every screen at a wide window and at a phone's width
    const screens = [
      "overview",
      "usage",
      "invoices",
      "credit-notes",
      "keys",
      "members",
      "alerts",
      "webhooks",
      "audit",
    ];
    for (const screen of screens) {
      await page.goto(`${base}/console/${screen}`);
      await checkLayout(page, `${screen} at 1280`);
    }
    await page.setViewportSize({ width: 390, height: 844 });
    for (const screen of screens) {
      await page.goto(`${base}/console/${screen}`);
      await checkLayout(page, `${screen} at 390`);
      await checkScreen(page, `${screen}-phone`, false);
      if (screen === "usage") await checkChart(page, false);
    }
    // The menu opens to the same links.
    await page.locator(".phone-menu summary").click();
    await page
      .getByRole("navigation", { name: "Console menu" })
      .getByRole("link", { name: "Members" })
      .click();
    await expect(page.getByRole("heading", { level: 1 }).textContent()).resolves.toBe("Members");
    if (screenshotDir) {
      for (const screen of ["overview", "usage"]) {
        await page.goto(`${base}/console/${screen}`);
        await page.screenshot({
          path: path.join(screenshotDir, `${screen}-phone.png`),
          fullPage: true,
        });
      }
    }
    await page.setViewportSize({ width: 1280, height: 860 });

    // ---- operator screens are not for the owner; sign out ends the session
    await page.goto(`${base}/console/admin/settlement`);
    await page.getByText("Only platform administrators").waitFor();
    problems.splice(0, problems.length, ...problems.filter((p) => !/status of 403/.test(p)));
    await page.goto(`${base}/console/overview`);
    await signOut(page);
    await page.goto(`${base}/console/keys`);
    await page.waitForURL(/\/console\/login/);

    // ---- the platform administrator
    await signIn(page, ADMIN.email, ADMIN.password);
    await go(page, "Tenants", "Tenants");
    await page.getByLabel("Name or slug contains").fill("Console Labs");
    await page.getByRole("button", { name: "Search" }).click();
    await page.getByRole("cell", { name: slug, exact: true }).waitFor();
    await checkScreen(page, "operator-tenants");

    // Catalog: a feature, a plan, a price with trial days, an entitlement.
    await go(page, "Catalog", "Catalog");
    const key = `exports_${slug.slice(-8)}`;
    await page.getByLabel("Feature name").fill("Exports");
    await page.getByLabel("Lookup key").fill(key);
    await page.getByLabel("Type").selectOption("QUOTA");
    await page.getByRole("button", { name: "Create feature" }).click();
    await page.getByText("The feature is created").waitFor();
    await page.getByLabel("Plan name").fill("Console Team");
    await page.getByLabel("Slug").fill(`team-${slug.slice(-8)}`);
    await page.getByRole("button", { name: "Create plan" }).click();
    await page.getByText("The plan is created").waitFor();
    await page.getByLabel("Amount (cents)").fill("4900");
    await page.getByLabel("Trial days (optional)").fill("7");
    await page.getByRole("button", { name: "Add price" }).click();
    await page.getByText("The price is added").waitFor();
    await page.getByRole("cell", { name: "7 days" }).waitFor();
    await page.getByLabel("Feature", { exact: true }).selectOption({ label: "Exports (QUOTA)" });
    await page.getByLabel("Limit", { exact: true }).fill("10");
    await page.getByLabel("At the limit").selectOption("HARD");
    await page.getByLabel("Resets").selectOption("MONTHLY");
    await page.getByRole("button", { name: "Grant" }).click();
    await page.getByText("The feature is granted to the plan").waitFor();
    await checkScreen(page, "operator-catalog-plan", false);
    await go(page, "Catalog", "Catalog");
    await checkScreen(page, "operator-catalog");

    // Settlement: generate the owner's draft, finalize it, download its PDF.
    await go(page, "Settlement", "Settlement");
    await page
      .getByLabel("Tenant")
      .last()
      .selectOption({ label: `Console Labs (${slug})` });
    await page.getByRole("button", { name: "Show invoices" }).click();
    await page.getByRole("button", { name: "Generate the current period's draft" }).click();
    await page.getByText("A draft invoice is generated").waitFor();
    await page.getByRole("button", { name: "Finalize" }).click();
    await page.getByText("The invoice is finalized").waitFor();
    // The period was not over: the question said so before anything was billed.
    expect(dialogs.at(-1)).toMatch(/Its period runs until \d{4}-\d{2}-\d{2}: finalizing now bills/);
    const row = page.getByRole("row", { name: /INV-/ });
    const invoiceNumber = ((await row.getByRole("link").first().textContent()) ?? "").trim();
    expect(invoiceNumber).toMatch(/^INV-/);
    await checkScreen(page, "operator-settlement");
    const [download] = await Promise.all([
      page.waitForEvent("download"),
      row.getByRole("link", { name: /PDF/ }).click(),
    ]);
    expect(download.suggestedFilename()).toBe(`${invoiceNumber}.pdf`);
    const pdf = readFileSync((await download.path()) as string);
    const { text } = await extractText(await getDocumentProxy(new Uint8Array(pdf)), {
      mergePages: true,
    });
    const flat = text.replace(/\s+/g, " ");
    expect(flat).toContain(invoiceNumber);
    expect(flat).toContain("Console Labs");
    expect(flat).toMatch(/Pro plan/);
    expect(flat).toMatch(/Total due 290\.00 USD/);
    // The invoice as the operator sees it, then the list again with the back button.
    await row.getByRole("link", { name: invoiceNumber, exact: true }).click();
    await expect(page.getByTestId("invoice-total").textContent()).resolves.toBe("290.00 USD");
    await page.goBack();
    await page.waitForURL(/\/console\/admin\/settlement\?tenantId=/);

    // A credit note on it: the form, its confirmation, the note on the invoice.
    await row.getByRole("link", { name: /Credit note/ }).click();
    await page.getByLabel("Settlement").selectOption("CREDIT");
    await page
      .getByLabel(/^Credit on /)
      .first()
      .fill("1000");
    await checkScreen(page, "operator-credit-note", false);
    await page.getByRole("button", { name: "Issue the credit note" }).click();
    await page.getByText("The credit note is issued").waitFor();
    await page
      .getByText(/CN-\d{4}-\d{6}/)
      .first()
      .waitFor();

    // Dead letters: the pipeline has nothing stuck.
    await go(page, "Dead letters", "Dead letters");
    await page.getByText("No dead letter with this status").waitFor();
    await checkScreen(page, "operator-dead-letters");
    await signOut(page);

    // ---- the owner sees the finalized invoice and downloads it too
    await signIn(page, owner.email, PASSWORD);
    await page.getByLabel("Tenant").selectOption({ label: "Console Labs (OWNER)" });
    await page.waitForURL(/notice=tenant-switched/);
    await go(page, "Invoices", "Invoices");
    await page.getByRole("link", { name: invoiceNumber, exact: true }).click();
    await expect(page.getByTestId("invoice-total").textContent()).resolves.toBe("290.00 USD");
    await checkScreen(page, "invoice");
    const [ownerDownload] = await Promise.all([
      page.waitForEvent("download"),
      page.getByRole("link", { name: "Download as PDF" }).click(),
    ]);
    expect(ownerDownload.suggestedFilename()).toBe(`${invoiceNumber}.pdf`);
    await go(page, "Invoices", "Invoices");
    await checkScreen(page, "invoices");

    // ---- prepaid credit: the owner buys some; it counts once its TOP_UP invoice is paid
    await go(page, "Overview", "Overview");
    await expect(page.getByTestId("prepaid-balance").textContent()).resolves.toBe("0.00 USD");
    await page.getByText("No credit yet").waitFor();
    await page.getByLabel("Amount (cents)").fill("2500");
    await page.getByRole("button", { name: "Buy credit" }).click();
    await page.getByText("The top-up is invoiced").waitFor();
    const grantRow = page
      .getByRole("region", { name: "Credit grants in the order usage draws them" })
      .getByRole("row", { name: /25\.00 USD/ });
    await expect(grantRow.textContent()).resolves.toMatch(/paid\s*PENDING/);
    await expect(page.getByTestId("prepaid-balance").textContent()).resolves.toBe("0.00 USD");
    await checkScreen(page, "overview-credit", false);
    await signOut(page);

    await signIn(page, ADMIN.email, ADMIN.password);
    await go(page, "Settlement", "Settlement");
    await page
      .getByLabel("Tenant")
      .last()
      .selectOption({ label: `Console Labs (${slug})` });
    await page.getByRole("button", { name: "Show invoices" }).click();
    await page
      .getByRole("row")
      .filter({ has: page.getByRole("button", { name: "Mark paid" }) })
      .filter({ hasNotText: invoiceNumber })
      .getByRole("button", { name: "Mark paid" })
      .click();
    await page.getByText("The invoice is marked paid").waitFor();
    await signOut(page);

    await signIn(page, owner.email, PASSWORD);
    await page.getByLabel("Tenant").selectOption({ label: "Console Labs (OWNER)" });
    await page.waitForURL(/notice=tenant-switched/);
    await until("the paid grant to join the balance", async () => {
      await page.reload();
      return (await page.getByTestId("prepaid-balance").textContent()) === "25.00 USD"
        ? true
        : undefined;
    });
    await expect(grantRow.textContent()).resolves.toMatch(/paid\s*ACTIVE/);
    await signOut(page);
  }
});
