import type { Hono } from "hono";
import { html } from "hono/html";
import type { ApiFetch } from "../api-fetch.ts";
import { badge, table, when } from "../layout.ts";
import type { ConsoleEnv } from "../session.ts";
import type { PageHandler } from "../signed-in.ts";
import { render } from "../view.ts";
import { tenantRoute, unavailable } from "./tenant-page.ts";

const members: PageHandler = async (c, view) => {
  const list = await view.api.get(`/tenants/${view.tenantId}/members`);
  return render(c, view, {
    title: "Members",
    current: "/console/members",
    body: !list.ok
      ? unavailable("the members", list)
      : table(
          "Members and their roles",
          ["Name", "Email", "Role", "Joined"],
          (
            list.body.data as {
              userId: string;
              email: string;
              firstName: string;
              lastName: string;
              role: string;
              joinedAt: string;
            }[]
          ).map(
            (m) =>
              html`<tr><td>${m.firstName} ${m.lastName}${m.userId === view.user.id ? " (you)" : ""}</td><td>${m.email}</td><td>${badge(m.role)}</td><td>${when(m.joinedAt)}</td></tr>`,
          ),
          "No members.",
        ),
  });
};

export function registerMemberPages(app: Hono<ConsoleEnv>, fetchApi: ApiFetch) {
  app.get("/members", tenantRoute(fetchApi)("/console/members", "Members", members));
}
