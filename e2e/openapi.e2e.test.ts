/**
 * Every OpenAPI document the workers serve is valid for client generators:
 * it passes @readme/openapi-parser (the OpenAPI 3.1 schema plus its checks
 * for duplicate parameters, path parameters and operation ids), and every
 * JSON Schema `pattern` in it is a regular expression an id can match.
 */
import { compileErrors, validate } from "@readme/openapi-parser";
import { describe, expect, inject, it } from "vitest";

const { billingUrl, aqiUrl, portfolioUrl } = inject("stack");

const DOCUMENTS = [
  { name: "billing", url: () => `${billingUrl}/api/docs-json` },
  { name: "aqi", url: () => `${aqiUrl}/openapi.json` },
  { name: "portfolio", url: () => `${portfolioUrl}/openapi.json` },
];

interface Found {
  at: string;
  schema: Record<string, unknown>;
}

/** Every object in the document with a string `pattern`, with its JSON path. */
function schemasWithPattern(node: unknown, at = "#"): Found[] {
  if (Array.isArray(node))
    return node.flatMap((item, index) => schemasWithPattern(item, `${at}/${index}`));
  if (!node || typeof node !== "object") return [];
  const object = node as Record<string, unknown>;
  const own: Found[] = typeof object.pattern === "string" ? [{ at, schema: object }] : [];
  return own.concat(
    Object.entries(object).flatMap(([key, value]) => schemasWithPattern(value, `${at}/${key}`)),
  );
}

/** Whether the pattern has an end anchor with something after it: nothing could match. */
function hasTextAfterEndAnchor(pattern: string): boolean {
  const withoutEscapes = pattern.replace(/\\./g, "");
  const anchor = withoutEscapes.indexOf("$");
  return (
    anchor !== -1 &&
    anchor !== withoutEscapes.length - 1 &&
    !withoutEscapes.slice(anchor).startsWith("$)")
  );
}

describe("OpenAPI documents are valid", () => {
  for (const document of DOCUMENTS) {
    it(`${document.name}: passes the OpenAPI validator`, async () => {
      const response = await fetch(document.url());
      expect(response.status).toBe(200);
      const api = await response.json();
      const result = await validate(structuredClone(api) as Parameters<typeof validate>[0]);
      expect(result.valid, result.valid ? "" : compileErrors(result)).toBe(true);
      expect(result.warnings).toEqual([]);
    });

    it(`${document.name}: every pattern compiles and can match; UUID patterns match an id`, async () => {
      const api = await (await fetch(document.url())).json();
      const found = schemasWithPattern(api);
      for (const { at, schema } of found) {
        const pattern = schema.pattern as string;
        // JSON Schema patterns are ECMA-262 regular expressions, in unicode mode.
        expect(() => new RegExp(pattern, "u"), `${at}: ${pattern}`).not.toThrow();
        expect(hasTextAfterEndAnchor(pattern), `${at}: ${pattern}`).toBe(false);
        if (typeof schema.example === "string")
          expect(new RegExp(pattern, "u").test(schema.example), `${at}: example`).toBe(true);
        // A UUID pattern (8-4-4-4-12 hex groups) must accept a real id.
        if (/\{8\}-.*\{12\}/.test(pattern)) {
          const id = crypto.randomUUID();
          expect(new RegExp(pattern, "u").test(id), `${at}: ${pattern} against ${id}`).toBe(true);
        }
      }
    });
  }
});
