import { exports } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import expected from "./fixtures/openapi.json?raw";

// The OpenAPI document is the API's contract with its clients: every route,
// field and status code they rely on. It must change only on purpose, so the
// served text is compared byte for byte with the committed one. After a
// deliberate change, rewrite the fixture from the running dev stack
// (`npm run dev`) and commit it with the change:
//   curl -s localhost:8787/api/docs-json > workers/billing/test/fixtures/openapi.json
function indented(json: string): string {
  return JSON.stringify(JSON.parse(json), null, 2);
}

describe("API documentation", () => {
  it("serves the OpenAPI document unchanged from the committed one", async () => {
    const response = await exports.default.fetch("http://billing/api/docs-json");
    expect(response.status).toBe(200);
    const served = await response.text();
    // Indented first, so that a difference shows as a readable diff of the
    // lines concerned; then the exact text, which also covers the layout.
    expect(indented(served)).toBe(indented(expected));
    expect(served === expected, "same document, laid out differently").toBe(true);
  });
});
