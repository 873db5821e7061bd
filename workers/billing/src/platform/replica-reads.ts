import { ApiError } from "@edge-platform/shared/http/api-error";
import { createMiddleware } from "hono/factory";
import type { AppEnv } from "./app-env.ts";

export const D1_BOOKMARK_HEADER = "x-d1-bookmark";
/** D1 bookmarks are dash-separated hexadecimal positions in the database's history. */
const BOOKMARK = /^[0-9a-f]+(?:-[0-9a-f]+)*$/i;
const MAX_BOOKMARK_LENGTH = 200;

/**
 * For display reads that may lag the latest write slightly (a tenant's
 * subscriptions): the route reads through a D1 session (the Sessions API),
 * which with read replication enabled is served by a replica near the
 * caller instead of the primary. The response carries the session's
 * bookmark in `x-d1-bookmark`; a client that sends it back reads data at
 * least that recent (reads after its own writes stay in order). Limits
 * are never decided on such reads: the EntitlementCounter is their source.
 */
export function replicaReads() {
  return createMiddleware<AppEnv>(async (c, next) => {
    const given = c.req.header(D1_BOOKMARK_HEADER)?.trim();
    if (given !== undefined && (given.length > MAX_BOOKMARK_LENGTH || !BOOKMARK.test(given))) {
      throw new ApiError(400, `${D1_BOOKMARK_HEADER} must be a bookmark returned by this API`);
    }
    const session = c.env.DB.withSession(given || "first-unconstrained");
    c.set("replicaSession", session);
    await next();
    const bookmark = session.getBookmark();
    if (bookmark) c.header(D1_BOOKMARK_HEADER, bookmark);
  });
}
