/**
 * Request validation that answers the way FastAPI + pydantic v2 do.
 *
 * The request schemas are zod (so @hono/zod-openapi documents exactly what
 * validates), built from the field helpers below. Each helper registers what
 * pydantic type the field stands for (float, int, str, Literal, model, list
 * with bounds); when zod rejects a body, `pydanticErrors` re-derives every
 * failing field's error from that registry and the raw input, so the 422
 * entries carry pydantic's `type`, `msg`, `ctx` and `input` rather than zod's
 * wording, one entry per failing field, in declaration order.
 *
 * Lax mode, as pydantic: numeric strings ("28.5", " 15 ") and booleans are
 * accepted for numbers, whole floats (15.0) for integers. Unlike pydantic's
 * default, non-finite numbers ("inf", "nan") are refused (`finite_number`):
 * they would reach the model as garbage.
 */
import type { FastApiValidationIssue } from "@edge-platform/shared/http/error-shapes/fastapi";
import { z } from "@hono/zod-openapi";

type Bounds = { ge?: number; le?: number };

export type PydanticField =
  | ({ kind: "float" } & Bounds)
  | ({ kind: "int" } & Bounds)
  | { kind: "string" }
  | { kind: "literal"; values: readonly (string | number)[] }
  | { kind: "model" }
  | { kind: "list"; minLength: number; maxLength: number };

const fields = z.registry<PydanticField>();

export type Loc = (string | number)[];

/** The OpenAPI metadata the field helpers pass through (a subset of zod-to-openapi's). */
export interface DocMeta {
  description?: string;
  example?: unknown;
  type?: "integer" | "number" | "string";
  enum?: readonly (string | number)[];
}

function withDoc<T extends z.ZodType>(schema: T, doc: DocMeta): T {
  return (schema as unknown as { openapi(metadata: DocMeta): T }).openapi(doc);
}

const FLOAT_TEXT = /^[+-]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][+-]?\d+)?$/;
const NON_FINITE_TEXT = /^([+-]?)(?:inf|infinity|nan)$/i;
const INT_TEXT = /^[+-]?\d+(?:\.0*)?$/;

/** pydantic's lax float input: numbers, booleans, numeric strings; anything else is left for the type error. */
export function laxFloat(value: unknown): unknown {
  if (typeof value === "boolean") return value ? 1 : 0;
  if (typeof value !== "string") return value;
  const text = value.trim();
  if (FLOAT_TEXT.test(text)) return Number(text);
  const nonFinite = NON_FINITE_TEXT.exec(text);
  if (nonFinite) {
    return text.toLowerCase().includes("nan")
      ? Number.NaN
      : nonFinite[1] === "-"
        ? Number.NEGATIVE_INFINITY
        : Number.POSITIVE_INFINITY;
  }
  return value;
}

/** pydantic's lax int input: numbers, booleans, integer strings (also "15.0"). */
export function laxInt(value: unknown): unknown {
  if (typeof value === "boolean") return value ? 1 : 0;
  if (typeof value !== "string") return value;
  const text = value.trim();
  return INT_TEXT.test(text) ? Number(text) : value;
}

/** `Literal[0, 1]` compares by equality in Python, so True/False (and 1.0) pass; "1" does not. */
function laxIntLiteral(value: unknown): unknown {
  return typeof value === "boolean" ? (value ? 1 : 0) : value;
}

function register<T extends z.ZodType>(schema: T, field: PydanticField): T {
  fields.add(schema, field);
  return schema;
}

export function floatField(bounds: Bounds = {}, doc: DocMeta = {}) {
  let number = z.number();
  if (bounds.ge !== undefined) number = number.min(bounds.ge);
  if (bounds.le !== undefined) number = number.max(bounds.le);
  return register(withDoc(z.preprocess(laxFloat, number), doc), { kind: "float", ...bounds });
}

/** `Optional[float] = None` with bounds: absent or null is None; otherwise a float field. */
export function optionalFloatField(bounds: Bounds = {}, doc: DocMeta = {}) {
  let number = z.number();
  if (bounds.ge !== undefined) number = number.min(bounds.ge);
  if (bounds.le !== undefined) number = number.max(bounds.le);
  return register(withDoc(z.preprocess(laxFloat, number.nullable()).optional(), doc), {
    kind: "float",
    ...bounds,
  });
}

export function intField(bounds: Bounds = {}, doc: DocMeta = {}) {
  let number = z.number().int();
  if (bounds.ge !== undefined) number = number.min(bounds.ge);
  if (bounds.le !== undefined) number = number.max(bounds.le);
  return register(withDoc(z.preprocess(laxInt, number), doc), { kind: "int", ...bounds });
}

export function stringField(doc: DocMeta = {}) {
  return register(withDoc(z.string(), doc), { kind: "string" });
}

export function stringLiteralField<const T extends readonly [string, ...string[]]>(
  values: T,
  doc: DocMeta = {},
) {
  return register(withDoc(z.enum(values), doc), { kind: "literal", values });
}

export function zeroOrOneField(doc: DocMeta = {}) {
  return register(
    withDoc(z.preprocess(laxIntLiteral, z.literal([0, 1])), {
      type: "integer",
      enum: [0, 1],
      ...doc,
    }),
    { kind: "literal", values: [0, 1] },
  );
}

export function modelSchema<T extends z.ZodRawShape>(name: string, shape: T, doc: DocMeta = {}) {
  return register(withDoc(z.object(shape), doc).openapi(name), { kind: "model" });
}

export function listField<T extends z.ZodType>(
  item: T,
  minLength: number,
  maxLength: number,
  doc: DocMeta = {},
) {
  return register(withDoc(z.array(item).min(minLength).max(maxLength), doc), {
    kind: "list",
    minLength,
    maxLength,
  });
}

function child(schema: z.ZodType | undefined, key: PropertyKey): z.ZodType | undefined {
  // An optional field's items and keys sit behind its wrappers (Optional[list[...]] = None).
  while (schema instanceof z.ZodOptional || schema instanceof z.ZodNullable) {
    schema = schema.unwrap() as z.ZodType;
  }
  if (schema instanceof z.ZodObject && typeof key === "string") {
    return (schema.shape as Record<string, z.ZodType>)[key];
  }
  if (schema instanceof z.ZodArray && typeof key === "number") {
    return schema.element as z.ZodType;
  }
  return undefined;
}

function schemaAt(root: z.ZodType, path: readonly PropertyKey[]): z.ZodType | undefined {
  let schema: z.ZodType | undefined = root;
  for (const key of path) schema = child(schema, key);
  return schema;
}

function registeredAt(root: z.ZodType, path: readonly PropertyKey[]): PydanticField | undefined {
  const schema = schemaAt(root, path);
  return schema ? fields.get(schema) : undefined;
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

/** The raw value at `path`, or `missing` with the object that lacks the key. */
function valueAt(
  body: unknown,
  path: readonly PropertyKey[],
): { missing: false; value: unknown } | { missing: true; parent: unknown } {
  let value = body;
  for (const key of path) {
    if (Array.isArray(value) && typeof key === "number") {
      value = value[key];
    } else if (isRecord(value) && typeof key === "string") {
      if (!Object.hasOwn(value, key)) return { missing: true, parent: value };
      value = value[key];
    } else {
      return { missing: true, parent: value };
    }
  }
  return { missing: false, value };
}

function quote(value: string | number): string {
  return typeof value === "string" ? `'${value}'` : String(value);
}

/** pydantic's "a, b or c". */
export function expectedLiterals(values: readonly (string | number)[]): string {
  const quoted = values.map(quote);
  if (quoted.length <= 1) return quoted.join("");
  return `${quoted.slice(0, -1).join(", ")} or ${quoted.at(-1)}`;
}

function plural(count: number, noun: string): string {
  return `${count} ${noun}${count === 1 ? "" : "s"}`;
}

function boundsIssue(
  loc: Loc,
  input: unknown,
  value: number,
  bounds: Bounds,
): FastApiValidationIssue | null {
  if (bounds.ge !== undefined && !(value >= bounds.ge)) {
    return {
      type: "greater_than_equal",
      loc,
      msg: `Input should be greater than or equal to ${bounds.ge}`,
      input,
      ctx: { ge: bounds.ge },
    };
  }
  if (bounds.le !== undefined && !(value <= bounds.le)) {
    return {
      type: "less_than_equal",
      loc,
      msg: `Input should be less than or equal to ${bounds.le}`,
      input,
      ctx: { le: bounds.le },
    };
  }
  return null;
}

const FINITE: Omit<FastApiValidationIssue, "loc" | "input"> = {
  type: "finite_number",
  msg: "Input should be a finite number",
};

function numberIssue(
  field: Extract<PydanticField, { kind: "float" | "int" }>,
  loc: Loc,
  input: unknown,
): FastApiValidationIssue | null {
  const coerced = field.kind === "float" ? laxFloat(input) : laxInt(input);
  if (typeof coerced !== "number") {
    if (typeof input === "string") {
      return field.kind === "float"
        ? {
            type: "float_parsing",
            loc,
            msg: "Input should be a valid number, unable to parse string as a number",
            input,
          }
        : {
            type: "int_parsing",
            loc,
            msg: "Input should be a valid integer, unable to parse string as an integer",
            input,
          };
    }
    return field.kind === "float"
      ? { type: "float_type", loc, msg: "Input should be a valid number", input }
      : { type: "int_type", loc, msg: "Input should be a valid integer", input };
  }
  if (!Number.isFinite(coerced)) return { ...FINITE, loc, input };
  if (field.kind === "int" && !Number.isInteger(coerced)) {
    return {
      type: "int_from_float",
      loc,
      msg: "Input should be a valid integer, got a number with a fractional part",
      input,
    };
  }
  return boundsIssue(loc, input, coerced, field);
}

function fieldIssue(
  field: PydanticField,
  loc: Loc,
  input: unknown,
  isBody: boolean,
): FastApiValidationIssue | null {
  switch (field.kind) {
    case "float":
    case "int":
      return numberIssue(field, loc, input);
    case "string":
      return typeof input === "string"
        ? null
        : { type: "string_type", loc, msg: "Input should be a valid string", input };
    case "literal": {
      const candidate = typeof input === "boolean" ? (input ? 1 : 0) : input;
      if (field.values.some((value) => value === candidate)) return null;
      const expected = expectedLiterals(field.values);
      return {
        type: "literal_error",
        loc,
        msg: `Input should be ${expected}`,
        input,
        ctx: { expected },
      };
    }
    case "model":
      if (isBody && (input === null || input === undefined)) {
        return { type: "missing", loc, msg: "Field required", input: null };
      }
      return isRecord(input)
        ? null
        : {
            type: "model_attributes_type",
            loc,
            msg: "Input should be a valid dictionary or object to extract fields from",
            input,
          };
    case "list": {
      if (!Array.isArray(input)) {
        return { type: "list_type", loc, msg: "Input should be a valid list", input };
      }
      if (input.length < field.minLength) {
        return {
          type: "too_short",
          loc,
          msg: `List should have at least ${plural(field.minLength, "item")} after validation, not ${input.length}`,
          input,
          ctx: { field_type: "List", min_length: field.minLength, actual_length: input.length },
        };
      }
      if (input.length > field.maxLength) {
        return {
          type: "too_long",
          loc,
          msg: `List should have at most ${plural(field.maxLength, "item")} after validation, not ${input.length}`,
          input,
          ctx: { field_type: "List", max_length: field.maxLength, actual_length: input.length },
        };
      }
      return null;
    }
  }
}

/** `Optional[list[item]] = None` with length bounds: absent or null is None; otherwise a list field. */
export function optionalListField<T extends z.ZodType>(
  item: T,
  minLength: number,
  maxLength: number,
  doc: DocMeta = {},
) {
  return register(withDoc(z.array(item).min(minLength).max(maxLength).nullable().optional(), doc), {
    kind: "list",
    minLength,
    maxLength,
  });
}

function startsWith(path: readonly PropertyKey[], prefix: readonly PropertyKey[]): boolean {
  return prefix.length <= path.length && prefix.every((key, index) => path[index] === key);
}

/**
 * FastAPI's 422 `detail` for a body that `schema` rejected with `issues`.
 * `body` is the parsed JSON as received. Locations are prefixed with "body".
 */
export function pydanticErrors(
  schema: z.ZodType,
  issues: readonly z.core.$ZodIssue[],
  body: unknown,
): FastApiValidationIssue[] {
  const detail: FastApiValidationIssue[] = [];
  const reported: PropertyKey[][] = [];
  // A list that fails its length is reported alone, as pydantic does (not its items too).
  const lengthFailures = issues
    .filter((issue) => issue.code === "too_small" || issue.code === "too_big")
    .filter((issue) => registeredAt(schema, issue.path)?.kind === "list")
    .map((issue) => issue.path);
  for (const issue of issues) {
    let path = issue.path;
    if (lengthFailures.some((prefix) => startsWith(path, prefix) && path.length > prefix.length)) {
      continue;
    }
    // Find the registered field the issue is about (itself or its nearest registered ancestor).
    let field = registeredAt(schema, path);
    while (!field && path.length > 0) {
      path = path.slice(0, -1);
      field = registeredAt(schema, path);
    }
    if (reported.some((prefix) => startsWith(path, prefix))) continue;
    const loc: Loc = ["body", ...(path as (string | number)[])];
    const found = valueAt(body, path);
    let entry: FastApiValidationIssue | null;
    if (found.missing) {
      entry = { type: "missing", loc, msg: "Field required", input: found.parent };
    } else if (field) {
      entry = fieldIssue(field, loc, found.value, path.length === 0);
    } else {
      entry = null;
    }
    // zod refused something the pydantic rules accept (should not happen): still report it.
    entry ??= {
      type: "value_error",
      loc,
      msg: issue.message,
      input: found.missing ? null : found.value,
    };
    detail.push(entry);
    reported.push([...path]);
  }
  return detail;
}
