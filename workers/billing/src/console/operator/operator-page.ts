import { html } from "hono/html";
import type { ApiFetch } from "../api-fetch.ts";
import { type PageHandler, signedIn } from "../signed-in.ts";
import { render } from "../view.ts";

/** A write the API refused: its page is shown again with the API's words, under its status. */
export type WriteError = { error?: string; status?: number };

/** Operator screens: platform administrators only (the API enforces it as well). */
function operatorPage(href: string, title: string, handler: PageHandler): PageHandler {
  return async (c, view) => {
    if (!view.user.isPlatformAdmin) {
      return render(c, view, {
        title,
        current: href,
        status: 403,
        error: "Only platform administrators can use the operator screens.",
        body: html``,
      });
    }
    return handler(c, view);
  };
}

/** Numbers from form fields: empty means "not given". */
export function optionalInteger(value: string | undefined): number | undefined {
  const trimmed = value?.trim();
  if (!trimmed) return undefined;
  return Number(trimmed);
}

/** Route handlers for operator pages: signed in, then a platform administrator. */
export function operatorRoute(fetchApi: ApiFetch) {
  return (href: string, title: string, handler: PageHandler) =>
    signedIn(fetchApi, operatorPage(href, title, handler));
}
