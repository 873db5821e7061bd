/**
 * The icon every HTML page of the three services names inline, so the
 * browser never asks for a /favicon.ico that no worker serves (a failed
 * request and a console error on every page). A data: URL needs
 * `img-src data:` wherever a Content-Security-Policy is sent.
 */
const FAVICON_SVG =
  '<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 32 32"><rect width="32" height="32" rx="7" fill="#0f1b3d"/><path d="M7 22l6-7 5 4 7-9" fill="none" stroke="#f2a900" stroke-width="3" stroke-linecap="round" stroke-linejoin="round"/></svg>';

export const FAVICON_HREF = `data:image/svg+xml,${encodeURIComponent(FAVICON_SVG)}`;

/** The `<link>` element for a page's head. */
export const FAVICON_LINK = `<link rel="icon" type="image/svg+xml" href="${FAVICON_HREF}">`;
