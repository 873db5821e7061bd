import { FAVICON_HREF } from "@edge-platform/shared/http/favicon";
import { html, raw } from "hono/html";
import type { HtmlEscapedString } from "hono/utils/html";
import { formatCents } from "../platform/index.ts";

export type Html = HtmlEscapedString | Promise<HtmlEscapedString>;

export interface NavItem {
  href: string;
  label: string;
}

export interface Shell {
  title: string;
  /** The nav entry this page belongs to. */
  current: string;
  csrfToken: string | undefined;
  user: { email: string; isPlatformAdmin: boolean } | null;
  tenants: { id: string; name: string; role: string }[];
  tenantId: string | undefined;
  tenantNav: NavItem[];
  operatorNav: NavItem[];
  notice?: string | undefined;
  error?: string | undefined;
}

/** Hidden fields every console form carries: the CSRF token and a fresh Idempotency-Key. */
export function formGuard(csrfToken: string | undefined): Html {
  return html`<input type="hidden" name="_csrf" value="${csrfToken ?? ""}" /><input type="hidden" name="_idem" value="${crypto.randomUUID()}" />`;
}

export function money(
  cents: number | null | undefined,
  currency: string | null | undefined,
): string {
  if (cents === null || cents === undefined) return "-";
  return formatCents(cents, currency ?? "usd");
}

/** "2026-11-25 14:03 UTC": one format everywhere, unambiguous for any reader. */
export function when(iso: string | null | undefined): string {
  if (!iso) return "-";
  const at = new Date(iso);
  if (Number.isNaN(at.getTime())) return iso;
  return `${at.toISOString().slice(0, 16).replace("T", " ")} UTC`;
}

export function day(iso: string | null | undefined): string {
  return iso ? iso.slice(0, 10) : "-";
}

export function count(value: number | null | undefined): string {
  return value === null || value === undefined ? "-" : value.toLocaleString("en-US");
}

/**
 * Each cell of a row gets its column's header as `data-label`, which the
 * stylesheet shows beside the value when a phone stacks the row's cells.
 */
function labelCells(row: Html, headers: string[]): Html {
  if (row instanceof Promise) return row.then((ready) => labelCells(ready, headers));
  let column = 0;
  const labelled = String(row).replace(/<td(?=[\s>])/g, () => {
    const label = headers[column++] ?? "";
    return `<td data-label="${label.replace(/[&"<>]/g, (char) => `&#${char.charCodeAt(0)};`)}"`;
  });
  return raw(labelled);
}

/**
 * A table in a focusable region, or the empty-state sentence. On a phone
 * each row becomes a stack of "header: value" lines, so nothing is cut
 * off at the screen's edge.
 */
export function table(
  caption: string,
  headers: string[],
  rows: Html[],
  empty: string,
  options: { captionHidden?: boolean } = {},
): Html {
  if (rows.length === 0) return html`<p class="empty">${empty}</p>`;
  // A heading right above already names the table: the caption is for screen readers only.
  const captionClass = options.captionHidden ? html` class="visually-hidden"` : "";
  return html`<div class="table-wrap" role="region" aria-label="${caption}" tabindex="0">
<table><caption${captionClass}>${caption}</caption><thead><tr>${headers.map((h) => html`<th scope="col">${h}</th>`)}</tr></thead>
<tbody>${rows.map((row) => labelCells(row, headers))}</tbody></table></div>`;
}

/** Previous and next links under a paged list; `base` ends in `?` or `&`. */
export function pager(base: string, meta: { page: number; totalPages: number } | undefined): Html {
  if (!meta || meta.totalPages <= 1) return html``;
  return html`<nav aria-label="Pages" class="row"><span>Page ${meta.page} of ${meta.totalPages}</span>${
    meta.page > 1 ? html` <a href="${base}page=${meta.page - 1}">Previous</a>` : ""
  }${meta.page < meta.totalPages ? html` <a href="${base}page=${meta.page + 1}">Next</a>` : ""}</nav>`;
}

export function badge(text: string): Html {
  return html`<span class="badge badge-${text.toLowerCase().replace(/[^a-z0-9]+/g, "-")}">${text}</span>`;
}

function navList(label: string, items: NavItem[], current: string): Html {
  if (items.length === 0) return html``;
  return html`<h2 class="nav-title">${label}</h2><ul>${items.map(
    (item) =>
      html`<li><a href="${item.href}"${item.href === current ? html` aria-current="page"` : ""}>${item.label}</a></li>`,
  )}</ul>`;
}

/**
 * The sidebar on wide screens; on a phone the same links behind one
 * "Menu" line (a details element: no script), so content starts at once.
 * Only one of the two is displayed at a time.
 */
function navigation(view: Shell, tenantName: string | undefined): Html {
  const lists = html`${navList(tenantName ?? "Tenant", view.tenantNav, view.current)}${navList("Operator", view.operatorNav, view.current)}`;
  const here = [...view.tenantNav, ...view.operatorNav].find((item) => item.href === view.current);
  return html`<nav class="sidebar" aria-label="Console">${lists}</nav>
<details class="phone-menu"><summary>Menu${here ? html`<span class="hint">: ${here.label}</span>` : ""}</summary><nav aria-label="Console menu">${lists}</nav></details>`;
}

export function shell(view: Shell, body: Html): Html {
  const tenant = view.tenants.find((t) => t.id === view.tenantId);
  return html`<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8" />
<meta name="viewport" content="width=device-width, initial-scale=1" />
<title>${view.title} · Billing console</title>
<link rel="icon" type="image/svg+xml" href="${FAVICON_HREF}" />
<link rel="stylesheet" href="/console/assets/console.css" />
<script src="/console/assets/console.js" defer></script>
</head>
<body>
<a class="skip" href="#main">Skip to content</a>
<header class="top">
  <a class="brand" href="/console">Billing console</a>
  ${
    view.user
      ? html`<div class="who">
    ${
      view.tenants.length > 1
        ? html`<form method="post" action="/console/tenant" class="switcher" data-autosubmit>
        ${formGuard(view.csrfToken)}
        <label for="tenant-switch">Tenant</label>
        <select id="tenant-switch" name="tenantId">${view.tenants.map(
          (t) =>
            html`<option value="${t.id}"${t.id === view.tenantId ? html` selected` : ""}>${t.name} (${t.role})</option>`,
        )}</select>
        <button type="submit">Switch</button>
      </form>`
        : tenant
          ? html`<span class="tenant-name">${tenant.name} (${tenant.role})</span>`
          : ""
    }
    <span class="email">${view.user.email}</span>
    <form method="post" action="/console/logout">${formGuard(view.csrfToken)}<button type="submit">Sign out</button></form>
  </div>`
      : ""
  }
</header>
<div class="frame">
${view.user ? navigation(view, tenant?.name) : ""}
<main id="main" tabindex="-1">
<h1>${view.title}</h1>
${view.notice ? html`<p class="notice" role="status">${view.notice}</p>` : ""}
${view.error ? html`<p class="error" role="alert">${view.error}</p>` : ""}
${body}
</main>
</div>
</body>
</html>`;
}
