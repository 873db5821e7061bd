import type { Hono } from "hono";
import { html } from "hono/html";
import { errorText } from "../api-client.ts";
import type { ApiFetch } from "../api-fetch.ts";
import { pager, table, when } from "../layout.ts";
import type { ConsoleEnv } from "../session.ts";
import type { PageHandler } from "../signed-in.ts";
import { render } from "../view.ts";
import { tenantRoute, unavailable } from "./tenant-page.ts";

const audit: PageHandler = async (c, view) => {
  const q = (name: string) => c.req.query(name)?.trim() || undefined;
  const filters = {
    action: q("action"),
    actorId: q("actorId"),
    targetId: q("targetId"),
    from: q("from"),
    to: q("to"),
  };
  const page = Math.max(1, Number(c.req.query("page")) || 1);
  const params = new URLSearchParams({ limit: "50", page: String(page) });
  for (const [name, value] of Object.entries(filters)) {
    if (!value) continue;
    // Date inputs give a day; the API wants an instant.
    params.set(name, name === "from" || name === "to" ? `${value}T00:00:00Z` : value);
  }
  const list = await view.api.get(`/audit-events?${params}`);
  const keep = new URLSearchParams(
    Object.entries(filters).filter((entry): entry is [string, string] => Boolean(entry[1])),
  );
  return render(c, view, {
    title: "Audit log",
    current: "/console/audit",
    body: html`<form method="get" action="/console/audit" class="row panel">
  <div class="field"><label for="audit-action">Action</label><input id="audit-action" name="action" value="${filters.action ?? ""}" placeholder="api_key.created" /></div>
  <div class="field"><label for="audit-actor">Actor id</label><input id="audit-actor" name="actorId" value="${filters.actorId ?? ""}" /></div>
  <div class="field"><label for="audit-target">Target id</label><input id="audit-target" name="targetId" value="${filters.targetId ?? ""}" /></div>
  <div class="field"><label for="audit-from">From (day)</label><input id="audit-from" name="from" type="date" value="${filters.from ?? ""}" /></div>
  <div class="field"><label for="audit-to">Until (day, exclusive)</label><input id="audit-to" name="to" type="date" value="${filters.to ?? ""}" /></div>
  <button type="submit">Filter</button> <a href="/console/audit">Clear</a>
</form>
${
  !list.ok
    ? list.status === 400
      ? html`<p class="error" role="alert">The filter is not valid: ${errorText(list)}</p>`
      : unavailable("the audit log", list)
    : html`${table(
        "Audit events, newest first",
        ["When", "Action", "Actor", "Target"],
        (
          list.body.data as {
            id: string;
            occurredAt?: string;
            createdAt?: string;
            action: string;
            actorType: string;
            actorId: string | null;
            targetType?: string;
            targetId?: string | null;
          }[]
        ).map(
          (event) =>
            html`<tr><td>${when(event.occurredAt ?? event.createdAt)}</td><td><code>${event.action}</code></td><td>${event.actorType}${event.actorId ? html`<br /><code class="hint">${event.actorId}</code>` : ""}</td><td>${event.targetType ?? ""}${event.targetId ? html`<br /><code class="hint">${event.targetId}</code>` : ""}</td></tr>`,
        ),
        "No audit event matches.",
      )}${pager(`/console/audit?${keep.size ? `${keep}&` : ""}`, list.body.meta)}`
}`,
  });
};

export function registerAuditPages(app: Hono<ConsoleEnv>, fetchApi: ApiFetch) {
  app.get("/audit", tenantRoute(fetchApi)("/console/audit", "Audit log", audit));
}
