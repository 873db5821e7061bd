/**
 * Cross-site request forgery defences of the console's state-changing
 * requests, besides SameSite=Strict cookies: the request must come from
 * the console's own origin (Origin, or Sec-Fetch-Site when a browser sends
 * no Origin), and must carry the session's CSRF token as the `_csrf` form
 * field (compared in constant time with the token in the session cookie).
 */

export type CsrfVerdict = { ok: true } | { ok: false; reason: string };

/** Whether the request was sent by a page of `expectedOrigin`. */
export function sameOriginRequest(
  headers: { origin: string | undefined; secFetchSite: string | undefined },
  expectedOrigin: string,
): CsrfVerdict {
  if (headers.origin !== undefined && headers.origin !== "null") {
    return headers.origin === expectedOrigin
      ? { ok: true }
      : { ok: false, reason: "The request came from another site" };
  }
  if (headers.secFetchSite === "same-origin") return { ok: true };
  return { ok: false, reason: "The request did not say which site it came from" };
}

/** Constant-time comparison of two tokens (the length is not secret). */
export function tokensMatch(expected: string | undefined, presented: string | undefined): boolean {
  if (!expected || !presented) return false;
  const a = new TextEncoder().encode(expected);
  const b = new TextEncoder().encode(presented);
  if (a.length !== b.length) return false;
  let difference = 0;
  for (let index = 0; index < a.length; index++) difference |= (a[index] ?? 0) ^ (b[index] ?? 0);
  return difference === 0;
}

export function checkCsrf(
  headers: { origin: string | undefined; secFetchSite: string | undefined },
  expectedOrigin: string,
  sessionToken: string | undefined,
  formToken: string | undefined,
): CsrfVerdict {
  const origin = sameOriginRequest(headers, expectedOrigin);
  if (!origin.ok) return origin;
  if (!tokensMatch(sessionToken, formToken)) {
    return { ok: false, reason: "The form's security token is missing or out of date" };
  }
  return { ok: true };
}
