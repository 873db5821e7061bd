import { describe, expect, it } from "vitest";
import {
  expectedLiterals,
  floatField,
  intField,
  laxFloat,
  laxInt,
  listField,
  modelSchema,
  pydanticErrors,
  stringField,
} from "./pydantic.ts";

describe("lax coercion (pydantic v2 lax mode)", () => {
  it("floats: numbers, booleans, numeric strings; others unchanged", () => {
    expect(laxFloat(1.5)).toBe(1.5);
    expect(laxFloat(true)).toBe(1);
    expect(laxFloat(" 28.5 ")).toBe(28.5);
    expect(laxFloat("1e3")).toBe(1000);
    expect(laxFloat(".5")).toBe(0.5);
    expect(laxFloat("-inf")).toBe(Number.NEGATIVE_INFINITY);
    expect(laxFloat("NaN")).toBeNaN();
    expect(laxFloat("abc")).toBe("abc");
    expect(laxFloat("0x10")).toBe("0x10");
    expect(laxFloat(null)).toBeNull();
  });

  it("ints: integer strings including '15.0'; fractional strings unchanged", () => {
    expect(laxInt("15")).toBe(15);
    expect(laxInt("15.00")).toBe(15);
    expect(laxInt(false)).toBe(0);
    expect(laxInt("15.5")).toBe("15.5");
    expect(laxInt(15.5)).toBe(15.5);
  });

  it("literal lists read the way pydantic prints them", () => {
    expect(expectedLiterals([0, 1])).toBe("0 or 1");
    expect(expectedLiterals(["a", "b", "c"])).toBe("'a', 'b' or 'c'");
    expect(expectedLiterals(["only"])).toBe("'only'");
  });
});

describe("pydanticErrors", () => {
  const Item = modelSchema("TestItem", {
    name: stringField(),
    ratio: floatField({ ge: 0, le: 1 }),
    count: intField({ ge: 1 }),
  });
  const Body = modelSchema("TestBody", { items: listField(Item, 1, 3) });

  function errors(body: unknown) {
    const result = Body.safeParse(body);
    expect(result.success).toBe(false);
    return pydanticErrors(Body, result.error!.issues, body);
  }

  it("nested locations carry the list index; missing reports the enclosing object", () => {
    const item = { name: "x", ratio: 2 };
    expect(errors({ items: [{ name: "a", ratio: 0.5, count: 2 }, item] })).toEqual([
      {
        type: "less_than_equal",
        loc: ["body", "items", 1, "ratio"],
        msg: "Input should be less than or equal to 1",
        input: 2,
        ctx: { le: 1 },
      },
      { type: "missing", loc: ["body", "items", 1, "count"], msg: "Field required", input: item },
    ]);
  });

  it("a list over its bound is one entry, even when its items are bad too", () => {
    const items = [{}, {}, {}, {}];
    expect(errors({ items })).toEqual([
      {
        type: "too_long",
        loc: ["body", "items"],
        msg: "List should have at most 3 items after validation, not 4",
        input: items,
        ctx: { field_type: "List", max_length: 3, actual_length: 4 },
      },
    ]);
  });

  it("a body that is not an object, or null", () => {
    expect(errors(42)).toEqual([
      {
        type: "model_attributes_type",
        loc: ["body"],
        msg: "Input should be a valid dictionary or object to extract fields from",
        input: 42,
      },
    ]);
    expect(errors(null)).toEqual([
      { type: "missing", loc: ["body"], msg: "Field required", input: null },
    ]);
  });

  it("integers beyond the safe range still get the bound error", () => {
    const item = { name: "x", ratio: 0.1, count: -1e20 };
    expect(errors({ items: [item] })).toEqual([
      {
        type: "greater_than_equal",
        loc: ["body", "items", 0, "count"],
        msg: "Input should be greater than or equal to 1",
        input: -1e20,
        ctx: { ge: 1 },
      },
    ]);
  });
});
