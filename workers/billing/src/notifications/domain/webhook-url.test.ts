import { describe, expect, it } from "vitest";
import { checkWebhookUrl } from "./webhook-url.ts";

const production = { allowHttpLocalhost: false };
const development = { allowHttpLocalhost: true };

const reasonOf = (url: string, policy = production) => {
  const check = checkWebhookUrl(url, policy);
  return check.ok ? null : check.reason;
};

describe("webhook URL rules", () => {
  it("accepts public HTTPS names and public IP literals, normalised", () => {
    for (const url of [
      "https://hooks.example.com/billing",
      "https://hooks.example.com:8443/a?b=c",
      "https://8.8.8.8/hook",
      "https://[2606:4700:4700::1111]/hook",
      "https://EXAMPLE.com./x",
    ]) {
      expect(checkWebhookUrl(url, production), url).toMatchObject({ ok: true });
    }
    expect(checkWebhookUrl("https://EXAMPLE.com/Path", production)).toEqual({
      ok: true,
      url: "https://example.com/Path",
    });
  });

  it("refuses anything but https, credentials, fragments and non-URLs", () => {
    expect(reasonOf("http://hooks.example.com/")).toMatch(/https/);
    expect(reasonOf("ftp://hooks.example.com/")).toMatch(/https/);
    expect(reasonOf("hooks.example.com/billing")).toMatch(/absolute URL/);
    expect(reasonOf("https://user:pass@hooks.example.com/")).toMatch(/credentials/);
    expect(reasonOf("https://hooks.example.com/#x")).toMatch(/fragment/);
    expect(reasonOf(`https://example.com/${"a".repeat(2100)}`)).toMatch(/at most 2048/);
  });

  it("refuses every non-public IPv4 range", () => {
    const cases: Record<string, RegExp> = {
      "https://127.0.0.1/": /loopback/,
      "https://127.255.255.254/": /loopback/,
      "https://10.1.2.3/": /private/,
      "https://172.16.0.1/": /private/,
      "https://172.31.255.255/": /private/,
      "https://192.168.1.1/": /private/,
      "https://169.254.169.254/latest/meta-data": /link-local/,
      "https://100.64.0.1/": /carrier-grade NAT/,
      "https://100.127.255.255/": /carrier-grade NAT/,
      "https://0.0.0.0/": /unspecified/,
      "https://224.0.0.1/": /multicast/,
      "https://239.255.255.250/": /multicast/,
      "https://255.255.255.255/": /broadcast/,
      "https://198.18.0.1/": /benchmarking/,
      "https://192.0.2.1/": /documentation/,
    };
    for (const [url, reason] of Object.entries(cases)) expect(reasonOf(url), url).toMatch(reason);
    // Just outside the ranges.
    for (const url of ["https://172.32.0.1/", "https://100.128.0.1/", "https://11.0.0.1/"]) {
      expect(checkWebhookUrl(url, production), url).toMatchObject({ ok: true });
    }
  });

  it("judges decimal, octal, hex and short IPv4 spellings as the address they are", () => {
    for (const url of [
      "https://2130706433/", // 127.0.0.1 as one number
      "https://0x7f000001/",
      "https://0x7f.0.0.1/",
      "https://0177.0.0.1/",
      "https://127.1/",
      "https://017700000001/",
      "https://0xa9fea9fe/", // 169.254.169.254
      "https://3232235777/", // 192.168.1.1
    ]) {
      expect(reasonOf(url), url).toMatch(/loopback|link-local|private/);
    }
  });

  it("refuses non-public IPv6, including IPv4-mapped and NAT64 forms", () => {
    const cases: Record<string, RegExp> = {
      "https://[::1]/": /loopback/,
      "https://[::]/": /unspecified/,
      "https://[fe80::1]/": /link-local/,
      "https://[fd00::1]/": /unique-local/,
      "https://[fc00::abcd]/": /unique-local/,
      "https://[ff02::1]/": /multicast/,
      "https://[::ffff:127.0.0.1]/": /IPv4-mapped a loopback/,
      "https://[::ffff:7f00:1]/": /IPv4-mapped a loopback/,
      "https://[::ffff:10.0.0.1]/": /IPv4-mapped a private/,
      "https://[::ffff:169.254.169.254]/": /IPv4-mapped a link-local/,
      "https://[::ffff:8.8.8.8]/": /IPv4-mapped IPv6/,
      "https://[64:ff9b::a00:1]/": /NAT64-embedded a private/,
      "https://[::127.0.0.1]/": /IPv4-compatible/,
      "https://[2001:db8::1]/": /documentation/,
      "https://[fec0::1]/": /site-local/,
    };
    for (const [url, reason] of Object.entries(cases)) expect(reasonOf(url), url).toMatch(reason);
  });

  it("refuses local names: localhost, *.localhost, .local, .internal and single labels", () => {
    for (const url of [
      "https://localhost/",
      "https://localhost./",
      "https://LOCALHOST:8443/",
      "https://api.localhost/",
      "https://printer.local/",
      "https://metadata.google.internal/",
      "https://intranet/",
    ]) {
      expect(reasonOf(url), url).toMatch(/local name|not a public DNS name/);
    }
  });

  it("the development setting allows http and https to localhost, 127.0.0.1 and [::1] on any port, nothing else", () => {
    for (const url of [
      "http://localhost:8787/hook",
      "http://127.0.0.1:49152/",
      "http://[::1]:3000/",
      "https://localhost/",
    ]) {
      expect(checkWebhookUrl(url, development), url).toMatchObject({ ok: true });
      expect(checkWebhookUrl(url, production).ok, url).toBe(false);
    }
    for (const url of [
      "http://10.0.0.1/",
      "http://127.0.0.2/",
      "http://2130706434/",
      "https://192.168.0.1/",
      "http://api.localhost/",
      "http://hooks.example.com/",
      "ftp://localhost/",
    ]) {
      expect(checkWebhookUrl(url, development).ok, url).toBe(false);
    }
  });
});
