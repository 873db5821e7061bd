// Where a tenant's webhook endpoint may point: a public HTTPS address. The
// rules run on the URL as WHATWG parsing normalises it, so the decimal,
// octal and hex IPv4 spellings (`http://2130706433`, `0x7f.1`, `0177.0.0.1`)
// and IPv4-mapped IPv6 (`[::ffff:127.0.0.1]`) are judged as the addresses
// they are. Names are not resolved here (Workers cannot resolve DNS), so a
// public name pointing at a private address is stopped by the platform's
// egress, not by this check; see docs/billing.md, "URL rules".

export const WEBHOOK_URL_MAX_LENGTH = 2048;

export interface WebhookUrlPolicy {
  /** Development only: also `http://` or `https://` to localhost, 127.0.0.1 or [::1], any port. */
  allowHttpLocalhost: boolean;
}

export type WebhookUrlCheck = { ok: true; url: string } | { ok: false; reason: string };

const refuse = (reason: string): WebhookUrlCheck => ({ ok: false, reason });

/** CIDR blocks (first address, prefix length) that are not public unicast IPv4. */
const PRIVATE_V4: ReadonlyArray<readonly [number, number, string]> = [
  [ipv4("0.0.0.0"), 8, "an unspecified (0.0.0.0/8) address"],
  [ipv4("10.0.0.0"), 8, "a private (10.0.0.0/8) address"],
  [ipv4("100.64.0.0"), 10, "a carrier-grade NAT (100.64.0.0/10) address"],
  [ipv4("127.0.0.0"), 8, "a loopback (127.0.0.0/8) address"],
  [ipv4("169.254.0.0"), 16, "a link-local (169.254.0.0/16) address"],
  [ipv4("172.16.0.0"), 12, "a private (172.16.0.0/12) address"],
  [ipv4("192.0.0.0"), 24, "an IETF protocol (192.0.0.0/24) address"],
  [ipv4("192.0.2.0"), 24, "a documentation (192.0.2.0/24) address"],
  [ipv4("192.88.99.0"), 24, "a 6to4 relay (192.88.99.0/24) address"],
  [ipv4("192.168.0.0"), 16, "a private (192.168.0.0/16) address"],
  [ipv4("198.18.0.0"), 15, "a benchmarking (198.18.0.0/15) address"],
  [ipv4("198.51.100.0"), 24, "a documentation (198.51.100.0/24) address"],
  [ipv4("203.0.113.0"), 24, "a documentation (203.0.113.0/24) address"],
  [ipv4("224.0.0.0"), 4, "a multicast (224.0.0.0/4) address"],
  [ipv4("240.0.0.0"), 4, "a reserved (240.0.0.0/4) or broadcast address"],
];

function ipv4(dotted: string): number {
  return dotted.split(".").reduce((value, part) => value * 256 + Number(part), 0);
}

const DOTTED_QUAD = /^(\d{1,3})\.(\d{1,3})\.(\d{1,3})\.(\d{1,3})$/;

function parseIpv4(host: string): number | null {
  const match = DOTTED_QUAD.exec(host);
  if (!match) return null;
  const parts = match.slice(1).map(Number);
  if (parts.some((part) => part > 255)) return null;
  return parts.reduce((value, part) => value * 256 + part, 0);
}

/** Why an IPv4 address (as a 32-bit number) is not public, or null when it is. */
export function nonPublicIpv4(address: number): string | null {
  for (const [base, prefix, what] of PRIVATE_V4) {
    const size = 2 ** (32 - prefix);
    if (address >= base && address < base + size) return what;
  }
  return null;
}

/** The eight 16-bit groups of an IPv6 address as the URL parser prints it (no zone, may end in dotted IPv4). */
function parseIpv6(text: string): number[] | null {
  let body = text;
  const tail: number[] = [];
  const dotted = /^(.*:)(\d{1,3}(?:\.\d{1,3}){3})$/.exec(body);
  if (dotted) {
    const v4 = parseIpv4(dotted[2] ?? "");
    if (v4 === null) return null;
    tail.push(Math.floor(v4 / 65536), v4 % 65536);
    body = `${dotted[1]}`;
    if (body.endsWith(":") && !body.endsWith("::")) body = body.slice(0, -1);
  }
  const halves = body.split("::");
  if (halves.length > 2) return null;
  const groups = (part: string | undefined) =>
    part === undefined || part === "" ? [] : part.split(":");
  const head = groups(halves[0]);
  const rest = groups(halves[1]);
  const known = head.length + rest.length + tail.length;
  if (halves.length === 1 && known !== 8) return null;
  if (halves.length === 2 && known > 7) return null;
  const fill = halves.length === 2 ? new Array<string>(8 - known).fill("0") : [];
  const all = [...head, ...fill, ...rest].map((group) =>
    /^[0-9a-f]{1,4}$/i.test(group) ? Number.parseInt(group, 16) : Number.NaN,
  );
  if (all.some(Number.isNaN)) return null;
  return [...all, ...tail];
}

/** Why an IPv6 address is not public unicast, or null when it is. */
export function nonPublicIpv6(groups: readonly number[]): string | null {
  const [g0 = 0, g1 = 0, g2 = 0, g3 = 0, g4 = 0, g5 = 0, g6 = 0, g7 = 0] = groups;
  const embeddedV4 = g6 * 65536 + g7;
  if (g0 === 0 && g1 === 0 && g2 === 0 && g3 === 0 && g4 === 0) {
    if (g5 === 0xffff) {
      return nonPublicIpv4(embeddedV4)
        ? `an IPv4-mapped ${nonPublicIpv4(embeddedV4)}`
        : "an IPv4-mapped IPv6 address (use the IPv4 address)";
    }
    if (g5 === 0 && g6 === 0 && g7 === 0) return "the unspecified (::) address";
    if (g5 === 0 && g6 === 0 && g7 === 1) return "the loopback (::1) address";
    if (g5 === 0) return "an IPv4-compatible (::/96) address";
  }
  if (g0 === 0x64 && g1 === 0xff9b && g2 === 0 && g3 === 0 && g4 === 0 && g5 === 0) {
    return nonPublicIpv4(embeddedV4)
      ? `a NAT64-embedded ${nonPublicIpv4(embeddedV4)}`
      : "a NAT64 (64:ff9b::/96) address (use the IPv4 address)";
  }
  if ((g0 & 0xffc0) === 0xfe80) return "a link-local (fe80::/10) address";
  if ((g0 & 0xffc0) === 0xfec0) return "a site-local (fec0::/10) address";
  if ((g0 & 0xfe00) === 0xfc00) return "a unique-local (fc00::/7) address";
  if ((g0 & 0xff00) === 0xff00) return "a multicast (ff00::/8) address";
  if (g0 === 0x2001 && g1 === 0x0db8) return "a documentation (2001:db8::/32) address";
  if (g0 === 0x2002) return "a 6to4 (2002::/16) address";
  if (g0 === 0x2001 && g1 === 0) return "a Teredo (2001::/32) address";
  if (g0 === 0x0100 && g1 === 0 && g2 === 0 && g3 === 0) return "a discard-only (100::/64) address";
  return null;
}

const LOCAL_SUFFIXES = [".localhost", ".local", ".internal", ".localdomain", ".home.arpa"];

function isLoopbackHost(hostname: string): boolean {
  return hostname === "localhost" || hostname === "127.0.0.1" || hostname === "[::1]";
}

/**
 * Whether `raw` may be a webhook endpoint: absolute `https://` URL without
 * credentials, to a public DNS name or a public IP literal. With
 * `allowHttpLocalhost` (development), `http://localhost`, `127.0.0.1` and
 * `[::1]` on any port pass too. Returns the normalised URL.
 */
export function checkWebhookUrl(raw: string, policy: WebhookUrlPolicy): WebhookUrlCheck {
  if (raw.length > WEBHOOK_URL_MAX_LENGTH) {
    return refuse(`url must be at most ${WEBHOOK_URL_MAX_LENGTH} characters`);
  }
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    return refuse("url must be an absolute URL");
  }
  if (url.username || url.password) return refuse("url must not contain credentials");
  if (url.hash) return refuse("url must not contain a fragment");
  // A trailing dot names the same host ("localhost." is localhost).
  const hostname = url.hostname.toLowerCase().replace(/\.$/, "");
  if (policy.allowHttpLocalhost && isLoopbackHost(hostname)) {
    if (url.protocol === "http:" || url.protocol === "https:") return { ok: true, url: url.href };
  }
  if (url.protocol !== "https:") return refuse("url must use https");
  if (hostname === "") return refuse("url must name a host");
  if (hostname.startsWith("[")) {
    const groups = parseIpv6(hostname.slice(1, -1));
    if (!groups) return refuse("url host is not a valid IPv6 address");
    const why = nonPublicIpv6(groups);
    return why ? refuse(`url host is ${why}; webhooks go to public addresses only`) : ok(url);
  }
  const v4 = parseIpv4(hostname);
  if (v4 !== null) {
    const why = nonPublicIpv4(v4);
    return why ? refuse(`url host is ${why}; webhooks go to public addresses only`) : ok(url);
  }
  if (hostname === "localhost" || LOCAL_SUFFIXES.some((suffix) => hostname.endsWith(suffix))) {
    return refuse(`url host ${hostname} is a local name; webhooks go to public hosts only`);
  }
  if (!hostname.includes(".")) {
    return refuse(`url host ${hostname} is not a public DNS name (no dot)`);
  }
  if (/^[\d.]+$/.test(hostname)) return refuse("url host is not a valid IPv4 address");
  return ok(url);
}

function ok(url: URL): WebhookUrlCheck {
  return { ok: true, url: url.href };
}
