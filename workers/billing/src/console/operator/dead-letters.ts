import { deadLetterStatuses } from "@edge-platform/shared/db/schema/usage";
import type { Context, Hono } from "hono";
import { html } from "hono/html";
import { errorText } from "../api-client.ts";
import type { ApiFetch } from "../api-fetch.ts";
import { badge, formGuard, table, when } from "../layout.ts";
import type { ConsoleEnv } from "../session.ts";
import { type ConsoleView, done, formOf, render } from "../view.ts";
import { operatorRoute, type WriteError } from "./operator-page.ts";

async function deadLettersPage(c: Context<ConsoleEnv>, view: ConsoleView, extra: WriteError = {}) {
  const status = c.req.query("status") || "FAILED";
  const list = await view.api.get(
    `/admin/dead-letter?limit=50${status === "ALL" ? "" : `&status=${encodeURIComponent(status)}`}`,
    { tenantId: null },
  );
  return render(c, view, {
    title: "Dead letters",
    current: "/console/admin/dead-letters",
    error: extra.error,
    status: extra.status,
    body: html`<form method="get" action="/console/admin/dead-letters" class="row panel">
  <div class="field"><label for="dl-status">Status</label><select id="dl-status" name="status">${[...deadLetterStatuses, "ALL"].map((s) => html`<option${s === status ? html` selected` : ""}>${s}</option>`)}</select></div>
  <button type="submit">Show</button>
</form>
${
  !list.ok
    ? html`<p class="error" role="alert">The dead letters could not be loaded: ${errorText(list)}</p>`
    : table(
        "Dead-lettered usage messages, newest first",
        ["Failed", "Stage", "Reason", "Tenant", "Retries", "Status", ""],
        (
          list.body.data as {
            id: string;
            firstFailedAt: string;
            failureStage: string;
            failureReason: string;
            tenantId: string | null;
            retryCount: number;
            status: string;
          }[]
        ).map(
          (d) =>
            html`<tr><td>${when(d.firstFailedAt)}</td><td>${d.failureStage}</td><td>${d.failureReason}</td><td><code class="hint">${d.tenantId ?? "-"}</code></td><td class="num">${d.retryCount}</td><td>${badge(d.status)}</td><td>${
              d.status === "FAILED" || d.status === "RETRYING"
                ? html`<form method="post" action="/console/admin/dead-letters/${d.id}/retry" class="inline">${formGuard(view.csrfToken)}<button type="submit" class="secondary">Retry</button></form> <form method="post" action="/console/admin/dead-letters/${d.id}/discard" class="inline" data-confirm="Discard this message for good?">${formGuard(view.csrfToken)}<button type="submit" class="danger">Discard</button></form>`
                : ""
            }</td></tr>`,
        ),
        "No dead letter with this status: the usage pipeline has nothing stuck.",
      )
}`,
  });
}

export function registerDeadLetterPages(app: Hono<ConsoleEnv>, fetchApi: ApiFetch) {
  const page = operatorRoute(fetchApi);
  app.get(
    "/admin/dead-letters",
    page("/console/admin/dead-letters", "Dead letters", (c, v) => deadLettersPage(c, v)),
  );
  for (const verb of ["retry", "discard"] as const) {
    app.post(
      `/admin/dead-letters/:id/${verb}`,
      page("/console/admin/dead-letters", "Dead letters", async (c, view) => {
        const form = await formOf(c);
        const result = await view.api.post(
          `/admin/dead-letter/${encodeURIComponent(c.req.param("id") as string)}/${verb}`,
          {
            tenantId: null,
            idempotencyKey: form._idem,
          },
        );
        if (!result.ok)
          return deadLettersPage(c, view, { error: errorText(result), status: result.status });
        return done(
          c,
          "/console/admin/dead-letters",
          verb === "retry" ? "dead-letter-retried" : "dead-letter-discarded",
        );
      }),
    );
  }
}
