/**
 * Every documentation page in headless Chromium with the network cut off:
 * only the stack's own origin answers, every other request is refused and
 * recorded. Each page must render one entry per operation of its OpenAPI
 * document, from files the worker serves itself. Runs against the
 * end-to-end stack; Chromium as in the page suite (e2e/browser/chromium.ts).
 */
import type { BrowserContext, Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { type Browser, launchChromium, skipBrowserTests } from "./browser/chromium.ts";

const stack = inject("stack");

const METHODS = ["get", "put", "post", "delete", "patch", "options", "head", "trace"];

interface DocsPage {
  service: "billing" | "aqi" | "portfolio";
  page: string;
  spec: string;
  renderer: "swagger-ui" | "redoc";
}

const PAGES: DocsPage[] = [
  { service: "billing", page: "/api/docs", spec: "/api/docs-json", renderer: "swagger-ui" },
  { service: "aqi", page: "/docs", spec: "/openapi.json", renderer: "swagger-ui" },
  { service: "aqi", page: "/redoc", spec: "/openapi.json", renderer: "redoc" },
  { service: "portfolio", page: "/docs", spec: "/openapi.json", renderer: "swagger-ui" },
  { service: "portfolio", page: "/redoc", spec: "/openapi.json", renderer: "redoc" },
];

/** "GET /v1/health" for every operation of an OpenAPI document. */
function operationsOf(document: { paths: Record<string, Record<string, unknown>> }): string[] {
  return Object.entries(document.paths).flatMap(([route, item]) =>
    METHODS.filter((method) => method in item).map((method) => `${method.toUpperCase()} ${route}`),
  );
}

/** What the page shows as operations: method and path of each rendered entry. */
function renderedOperations(page: Page, renderer: DocsPage["renderer"]): Promise<string[]> {
  return renderer === "swagger-ui"
    ? page.$$eval(".opblock .opblock-summary", (rows) =>
        rows.map(
          (row) =>
            `${row.querySelector(".opblock-summary-method")?.textContent?.trim()} ${row
              .querySelector(".opblock-summary-path")
              ?.getAttribute("data-path")}`,
        ),
      )
    : // ReDoc: one section per operation, with its method and path in the endpoint box.
      page.$$eval("[data-section-id]", (sections) =>
        sections.flatMap((section) => {
          const method = section.querySelector(".http-verb")?.textContent?.trim();
          const path = section.querySelector(".http-verb + span")?.textContent?.trim();
          return method && path ? [`${method.toUpperCase()} ${path}`] : [];
        }),
      );
}

describe.skipIf(skipBrowserTests)("documentation pages render offline in Chromium", () => {
  let chromium: Browser;
  let browser: BrowserContext;

  beforeAll(async () => {
    chromium = await launchChromium();
    browser = chromium.context;
  });

  afterAll(async () => {
    await chromium?.close();
  });

  const origin = (service: DocsPage["service"]) =>
    ({ billing: stack.billingUrl, aqi: stack.aqiUrl, portfolio: stack.portfolioUrl })[service];

  for (const docs of PAGES) {
    it(`${docs.service} ${docs.page} (${docs.renderer}) lists every operation`, {
      timeout: 60_000,
    }, async () => {
      const base = origin(docs.service);
      const openapi = (await (await fetch(`${base}${docs.spec}`)).json()) as {
        paths: Record<string, Record<string, unknown>>;
      };
      const expected = operationsOf(openapi);
      expect(expected.length).toBeGreaterThan(0);

      const html = await (await fetch(`${base}${docs.page}`)).text();
      expect(html.match(/https?:\/\/[^"'\s<>]*/g) ?? []).toEqual([]);

      const page = await browser.newPage();
      const outside: string[] = [];
      const problems: string[] = [];
      page.on("pageerror", (error) => problems.push(error.message));
      page.on("console", (message) => {
        if (message.type() === "error") problems.push(message.text());
      });
      const requested: string[] = [];
      page.on("request", (request) => requested.push(new URL(request.url()).pathname));
      await page.route("**/*", (route) => {
        const url = new URL(route.request().url());
        if (url.origin === base) return route.continue();
        outside.push(url.href);
        return route.abort("internetdisconnected");
      });
      await page.goto(`${base}${docs.page}`);
      const entries = page.locator(
        docs.renderer === "swagger-ui" ? ".opblock" : "[data-section-id] .http-verb",
      );
      await expect
        .poll(() => entries.count(), { timeout: 30_000 })
        .toBeGreaterThanOrEqual(expected.length);
      const rendered = await renderedOperations(page, docs.renderer);
      // ReDoc shows `{param}`, Swagger UI the document's path as is.
      expect(new Set(rendered)).toEqual(new Set(expected));
      expect(rendered.length).toBe(expected.length);
      expect(outside).toEqual([]);
      expect(problems).toEqual([]);
      // The icon is inline: no request for /favicon.ico, so no 404 in the console.
      expect(await page.locator('link[rel="icon"]').getAttribute("href")).toMatch(
        /^data:image\/svg\+xml,/,
      );
      expect(requested).not.toContain("/favicon.ico");
      await page.close();
    });
  }

  for (const [service, pathname] of [
    ["billing", "/"],
    ["portfolio", "/"],
  ] as const) {
    it(`${service} ${pathname}: an inline icon, no failed request, no console error`, async () => {
      const base = origin(service);
      const page = await browser.newPage();
      const problems: string[] = [];
      const requested: string[] = [];
      page.on("pageerror", (error) => problems.push(error.message));
      page.on("console", (message) => {
        if (message.type() === "error") problems.push(message.text());
      });
      page.on("requestfailed", (request) => problems.push(`${request.url()} failed`));
      page.on("request", (request) => requested.push(new URL(request.url()).pathname));
      await page.goto(`${base}${pathname}`);
      await page.waitForLoadState("networkidle");
      expect(await page.locator('link[rel="icon"]').getAttribute("href")).toMatch(
        /^data:image\/svg\+xml,/,
      );
      expect(requested).not.toContain("/favicon.ico");
      expect(problems).toEqual([]);
      await page.close();
    });
  }
});
