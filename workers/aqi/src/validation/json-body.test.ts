import { ApiError } from "@edge-platform/shared/http/api-error";
import { describe, expect, it } from "vitest";
import { validatedBody } from "./json-body.ts";
import { floatField, modelSchema, pydanticErrors, stringField } from "./pydantic.ts";

const Station = modelSchema("JsonBodyTestStation", {
  name: stringField(),
  latitude: floatField({ ge: -90, le: 90 }),
});

function refusal(run: () => unknown): ApiError {
  try {
    run();
  } catch (error) {
    if (error instanceof ApiError) return error;
    throw error;
  }
  throw new Error("the body was accepted");
}

describe("validatedBody", () => {
  it("takes what the quick check recognises as it is", () => {
    const recognised = { name: "Lodhi Road", latitude: 28.59 };
    expect(validatedBody(Station, () => recognised, { anything: true })).toBe(recognised);
  });

  it("otherwise answers what the schema answers: its coerced value", () => {
    expect(
      validatedBody(Station, () => undefined, { name: "Lodhi Road", latitude: "28.59", x: 1 }),
    ).toEqual({
      name: "Lodhi Road",
      latitude: 28.59,
    });
  });

  it("or FastAPI's 422 with pydantic's entries, as the schema's failure reads", () => {
    const body = { name: 7, latitude: 120 };
    const error = refusal(() => validatedBody(Station, () => undefined, body));
    const issues = Station.safeParse(body).error!.issues;
    expect(error.status).toBe(422);
    expect(error.details).toStrictEqual(pydanticErrors(Station, issues, body));
    expect(error.details).toStrictEqual([
      {
        type: "string_type",
        loc: ["body", "name"],
        msg: "Input should be a valid string",
        input: 7,
      },
      {
        type: "less_than_equal",
        loc: ["body", "latitude"],
        msg: "Input should be less than or equal to 90",
        input: 120,
        ctx: { le: 90 },
      },
    ]);
  });
});
