import type { Context } from "hono";
import { html } from "hono/html";
import type { ConsoleEnv } from "../session.ts";
import type { PageHandler } from "../signed-in.ts";
import { type ConsoleView, render } from "../view.ts";
import { tenantPage } from "./tenant-page.ts";

/*
 * What the invoice and credit-note pages share: operators open another
 * tenant's documents from settlement, and both hand out the API's PDFs.
 */

/** An operator looking at another tenant's document from settlement names the tenant. */
export function operatorTenant(c: Context<ConsoleEnv>, view: ConsoleView): string | undefined {
  const tenantId = c.req.query("tenantId");
  return tenantId && view.user.isPlatformAdmin ? tenantId : undefined;
}

/** Operators open any tenant's documents from settlement; members their own tenant's, by role. */
export function memberOrOperator(href: string, title: string, handler: PageHandler): PageHandler {
  return async (c, view) =>
    operatorTenant(c, view) ? handler(c, view) : tenantPage(href, title, handler)(c, view);
}

/**
 * The API's PDF at `apiPath` as a download, or a page saying why it could
 * not be made, with a link back to the list it came from.
 */
export async function pdfDownload(
  c: Context<ConsoleEnv>,
  view: ConsoleView,
  apiPath: string,
  page: { title: string; href: string; back: string },
): Promise<Response> {
  const response = await view.api.raw(apiPath, { tenantId: operatorTenant(c, view) });
  if (!response.ok) {
    const body = (await response.json().catch(() => ({}))) as { message?: string };
    return render(c, view, {
      title: page.title,
      current: page.href,
      status: response.status,
      error: `The PDF could not be made: ${body.message ?? `HTTP ${response.status}`}`,
      body: html`<p><a href="${page.href}">${page.back}</a></p>`,
    });
  }
  return new Response(response.body, {
    status: 200,
    headers: {
      "content-type": "application/pdf",
      "content-disposition": response.headers.get("content-disposition") ?? "attachment",
      "cache-control": "private, no-store",
    },
  });
}
