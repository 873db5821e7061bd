import type { HtmlEscapedString } from "hono/utils/html";

/** What hono's `html` template gives: escaped markup, possibly still resolving. */
export type Html = HtmlEscapedString | Promise<HtmlEscapedString>;
