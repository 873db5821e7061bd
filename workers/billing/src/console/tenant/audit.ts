import type { Hono } from "hono";
import { html } from "hono/html";
import { errorText } from "../api-client.ts";
import type { ApiFetch } from "../api-fetch.ts";
import { type Html, pager, table, when } from "../layout.ts";
import type { ConsoleEnv } from "../session.ts";
import type { PageHandler } from "../signed-in.ts";
import { type ConsoleView, render } from "../view.ts";
import { tenantRoute, unavailable } from "./tenant-page.ts";

const ISO_DAY = /^\d{4}-\d{2}-\d{2}$/;

/** Members' e-mails by user id, so the log names people; an actor outside the tenant keeps its id. */
async function memberEmails(view: ConsoleView): Promise<Map<string, string>> {
  const members = await view.api.get(
    `/tenants/${encodeURIComponent(view.tenantId ?? "")}/members?limit=100`,
  );
  if (!members.ok) return new Map();
  return new Map(
    (members.body.data as { userId: string; email: string }[]).map((m) => [m.userId, m.email]),
  );
}

function actorCell(
  event: { actorType: string; actorId: string | null },
  emails: Map<string, string>,
): Html {
  const email = event.actorId ? emails.get(event.actorId) : undefined;
  if (email) return html`${email}<br /><span class="hint">${event.actorType}</span>`;
  return html`${event.actorType}${event.actorId ? html`<br /><code class="hint">${event.actorId}</code>` : ""}`;
}

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
  const badDay = (["from", "to"] as const).find(
    (name) => filters[name] && !ISO_DAY.test(filters[name] as string),
  );
  const [list, emails] = await Promise.all([
    badDay ? Promise.resolve(null) : view.api.get(`/audit-events?${params}`),
    memberEmails(view),
  ]);
  const keep = new URLSearchParams(
    Object.entries(filters).filter((entry): entry is [string, string] => Boolean(entry[1])),
  );
  return render(c, view, {
    title: "Audit log",
    current: "/console/audit",
    body: html`<form method="get" action="/console/audit" class="row panel">
  <div class="field"><label for="audit-action">Action</label><input id="audit-action" name="action" value="${filters.action ?? ""}" placeholder="api_key.created" /></div>
  <div class="field"><label for="audit-actor">Actor (user id)</label><input id="audit-actor" name="actorId" value="${filters.actorId ?? ""}" /></div>
  <div class="field"><label for="audit-target">Target id</label><input id="audit-target" name="targetId" value="${filters.targetId ?? ""}" /></div>
  <div class="field"><label for="audit-from">From (UTC day)</label><input id="audit-from" name="from" value="${filters.from ?? ""}" placeholder="YYYY-MM-DD" pattern="\d{4}-\d{2}-\d{2}" inputmode="numeric" size="11" /></div>
  <div class="field"><label for="audit-to">Until (UTC day, exclusive)</label><input id="audit-to" name="to" value="${filters.to ?? ""}" placeholder="YYYY-MM-DD" pattern="\d{4}-\d{2}-\d{2}" inputmode="numeric" size="11" /></div>
  <button type="submit">Filter</button> <a href="/console/audit">Clear</a>
</form>
${
  !list
    ? html`<p class="error" role="alert">The filter is not valid: ${badDay === "from" ? "From" : "Until"} must be a day written YYYY-MM-DD, such as 2026-11-01.</p>`
    : !list.ok
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
              html`<tr><td>${when(event.occurredAt ?? event.createdAt)}</td><td><code>${event.action}</code></td><td>${actorCell(event, emails)}</td><td>${event.targetType ?? ""}${event.targetId ? html`<br /><code class="hint">${event.targetId}</code>` : ""}</td></tr>`,
          ),
          "No audit event matches.",
        )}${pager(`/console/audit?${keep.size ? `${keep}&` : ""}`, list.body.meta)}`
}`,
  });
};

export function registerAuditPages(app: Hono<ConsoleEnv>, fetchApi: ApiFetch) {
  app.get("/audit", tenantRoute(fetchApi)("/console/audit", "Audit log", audit));
}
