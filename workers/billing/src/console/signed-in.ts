import type { Context } from "hono";
import type { ApiFetch } from "./api-fetch.ts";
import type { ConsoleEnv } from "./session.ts";
import { type ConsoleView, loadView } from "./view.ts";

export type PageHandler = (c: Context<ConsoleEnv>, view: ConsoleView) => Promise<Response>;

/** Runs `handler` for a signed-in user; sends anyone else to sign-in. */
export function signedIn(fetchApi: ApiFetch, handler: PageHandler) {
  return async (c: Context<ConsoleEnv>) => {
    const view = await loadView(c, fetchApi);
    if (view instanceof Response) return view;
    return handler(c, view);
  };
}
