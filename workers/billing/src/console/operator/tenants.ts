import type { Hono } from "hono";
import { html } from "hono/html";
import { errorText } from "../api-client.ts";
import type { ApiFetch } from "../api-fetch.ts";
import { badge, pager, table, when } from "../layout.ts";
import type { ConsoleEnv } from "../session.ts";
import type { PageHandler } from "../signed-in.ts";
import { render } from "../view.ts";
import { operatorRoute } from "./operator-page.ts";

const tenants: PageHandler = async (c, view) => {
  const search = c.req.query("search")?.trim() || undefined;
  const page = Math.max(1, Number(c.req.query("page")) || 1);
  const params = new URLSearchParams({ limit: "25", page: String(page) });
  if (search) params.set("search", search);
  const list = await view.api.get(`/admin/tenants?${params}`, { tenantId: null });
  return render(c, view, {
    title: "Tenants",
    current: "/console/admin/tenants",
    body: html`<form method="get" action="/console/admin/tenants" class="row panel" role="search">
  <div class="field"><label for="tenant-search">Name or slug contains</label><input id="tenant-search" name="search" value="${search ?? ""}" /></div>
  <button type="submit">Search</button>
</form>
${
  !list.ok
    ? html`<p class="error" role="alert">The tenants could not be loaded: ${errorText(list)}</p>`
    : html`${table(
        "Tenants, newest first",
        ["Name", "Slug", "Status", "Created", ""],
        (
          list.body.data as {
            id: string;
            name: string;
            slug: string;
            status: string;
            createdAt: string;
          }[]
        ).map(
          (t) =>
            html`<tr><td>${t.name}</td><td><code>${t.slug}</code></td><td>${badge(t.status)}</td><td>${when(t.createdAt)}</td><td><a href="/console/admin/settlement?tenantId=${t.id}">Settlement<span class="visually-hidden"> of ${t.name}</span></a></td></tr>`,
        ),
        search ? "No tenant matches." : "No tenant yet.",
      )}${pager(`/console/admin/tenants?${search ? `search=${encodeURIComponent(search)}&` : ""}`, list.body.meta)}`
}`,
  });
};

export function registerTenantListPages(app: Hono<ConsoleEnv>, fetchApi: ApiFetch) {
  app.get("/admin/tenants", operatorRoute(fetchApi)("/console/admin/tenants", "Tenants", tenants));
}
