import { describe, expect, it } from "vitest";
import { findJsonSyntaxError } from "./json-syntax.ts";

describe("findJsonSyntaxError", () => {
  it.each([
    ['{"a": 1}', null],
    ['[1, 2.5e3, true, null, "x\\u00e9"]', null],
    ["", { position: 0, reason: "Expecting value" }],
    ["not json", { position: 0, reason: "Expecting value" }],
    ['{"a": }', { position: 6, reason: "Expecting value" }],
    ["{a: 1}", { position: 1, reason: "Expecting property name enclosed in double quotes" }],
    ['{"a" 1}', { position: 5, reason: "Expecting ':' delimiter" }],
    ['{"a": 1 "b": 2}', { position: 8, reason: "Expecting ',' delimiter" }],
    ["[1 2]", { position: 3, reason: "Expecting ',' delimiter" }],
    ['{"a": 1}}', { position: 8, reason: "Extra data" }],
    ['{"a": "x', { position: 6, reason: "Unterminated string starting at" }],
    ['"\\q"', { position: 1, reason: "Invalid \\escape" }],
  ])("%j", (text, expected) => {
    expect(findJsonSyntaxError(text)).toEqual(expected);
  });

  it("agrees with JSON.parse on what is valid", () => {
    for (const text of ['{"k":[{}]}', "  1  ", "[", "{,}", '{"a":1,}', "01"]) {
      let parses = true;
      try {
        JSON.parse(text);
      } catch {
        parses = false;
      }
      // "01" is "Extra data" at 1 for Python too; JSON.parse rejects it as well.
      expect(findJsonSyntaxError(text) === null).toBe(parses);
    }
  });
});
