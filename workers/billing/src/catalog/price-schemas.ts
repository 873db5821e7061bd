import {
  DECIMAL_PRICE_PATTERN,
  DECIMAL_PRICE_RULE,
  MAX_DIMENSIONS,
  MAX_MATCH_KEYS,
} from "@edge-platform/shared/billing/entitlement-rules";
import { MAX_PROPERTY_TEXT } from "@edge-platform/shared/billing/meter";
import { z } from "@hono/zod-openapi";
import { integer } from "../platform/index.ts";
import { MAX_PRICING_TIERS, pricingProblem } from "../pricing/index.ts";

// Request and response schemas of an entitlement's prices: tiered and
// package pricing, decimal prices, and prices per group (dimensions).

/** A whole number from 0 to the largest exact integer. */
export const count = (field: string, what = "a whole number") =>
  integer(field, what, 0, Number.MAX_SAFE_INTEGER, `${field} must not be negative`);

const WHOLE_MICRO_CENTS = "a whole number of micro-cents (1 cent = 100 micro-cents)";

/** A price in decimal micro-cents, as a string so that no digit is lost. */
const decimalPrice = (field: string) =>
  z
    .string({ message: `${field} must be ${DECIMAL_PRICE_RULE}` })
    .regex(DECIMAL_PRICE_PATTERN, `${field} must be ${DECIMAL_PRICE_RULE}`);

const TierBody = z
  .object({
    upTo: count("upTo", "a whole number of billed units, or null for the last tier").nullable(),
    unitPrice: count("unitPrice", WHOLE_MICRO_CENTS)
      .optional()
      .openapi({ description: "Micro-cents per unit; or give unitPriceDecimal" }),
    unitPriceDecimal: decimalPrice("unitPriceDecimal").optional().openapi({
      description:
        "Micro-cents per unit as a decimal string (up to 10 decimals), instead of unitPrice",
      example: "0.15",
    }),
    flatFee: count("flatFee", "a whole number of cents").optional(),
  })
  .strict();

/**
 * Tiered or package pricing. The shape is checked here; the tier rules
 * (strictly increasing, one open last tier, at most 20, one price per tier)
 * by the charge-model domain, so the API and the billing code agree on one
 * definition.
 */
export const PricingBody = z
  .discriminatedUnion(
    "model",
    [
      z
        .object({
          model: z.enum(["graduated", "volume"]),
          tiers: z
            .array(TierBody, { message: "pricing.tiers must be an array of tiers" })
            .max(MAX_PRICING_TIERS, `pricing.tiers must have at most ${MAX_PRICING_TIERS} tiers`),
        })
        .strict(),
      z
        .object({
          model: z.literal("package"),
          packageSize: integer(
            "packageSize",
            "a whole number of units, at least 1",
            1,
            Number.MAX_SAFE_INTEGER,
          ),
          packagePrice: count("packagePrice", "a whole number of cents"),
        })
        .strict(),
    ],
    { message: "pricing.model must be graduated, volume or package" },
  )
  .superRefine((pricing, context) => {
    const problem = pricingProblem(pricing);
    if (problem) context.addIssue({ code: "custom", message: problem });
  })
  .openapi("ChargePricing", {
    description:
      "How billed units are priced instead of `overagePrice`. graduated: each unit at the price of the tier it falls in; volume: every unit at the price of the tier the total reaches; `upTo` counts billed units cumulatively, the last tier has `upTo: null`; each tier has `unitPrice` in whole micro-cents or `unitPriceDecimal` in decimal micro-cents (exactly one), optional `flatFee` in cents. package: each started package of `packageSize` units costs `packagePrice` cents. Fractional quantities (AVG, WEIGHTED_SUM meters) are priced exactly, rounded half up to cents once per line.",
    example: {
      model: "graduated",
      tiers: [
        { upTo: 1000, unitPrice: 200 },
        { upTo: 5000, unitPrice: 100 },
        { upTo: null, unitPriceDecimal: "0.5" },
      ],
    },
  });

export const OveragePriceDecimalBody = decimalPrice("overagePriceDecimal").openapi({
  description:
    "Micro-cents per unit as a decimal string (up to 15 digits before the point, 10 after), instead of overagePrice: for prices below one micro-cent. Quantity x price is rounded half up to cents once per invoice line.",
  example: "0.15",
});

/** A group property's value in a dimension's match: a string or a finite number. */
const matchValue = z.union([z.string().max(MAX_PROPERTY_TEXT), z.number()], {
  message: "dimensions[].match values must be strings or finite numbers",
});

const DimensionBody = z
  .object({
    match: z
      .record(z.string(), matchValue, { message: "dimensions[].match must be an object" })
      .refine(
        (match) => {
          const size = Object.keys(match).length;
          return size >= 1 && size <= MAX_MATCH_KEYS;
        },
        { message: `dimensions[].match must name 1 to ${MAX_MATCH_KEYS} properties` },
      )
      .openapi({
        description: `1 to ${MAX_MATCH_KEYS} of the feature meter's groupBy properties and the value each must have (compared as strings)`,
        example: { model: "large", direction: "input" },
      }),
    includedAmount: count("includedAmount").optional().openapi({
      description: "Units of the group included before its price applies (default 0)",
    }),
    overagePrice: count("overagePrice", WHOLE_MICRO_CENTS)
      .optional()
      .openapi({ description: "Micro-cents per unit" }),
    overagePriceDecimal: decimalPrice("overagePriceDecimal")
      .optional()
      .openapi({ description: "Decimal micro-cents per unit", example: "0.15" }),
    pricing: PricingBody.optional(),
  })
  .strict()
  .openapi("EntitlementDimensionInput", {
    description:
      "The price of the groups whose values match: exactly one of overagePrice, overagePriceDecimal and pricing.",
    example: { match: { model: "large" }, includedAmount: 1000, overagePriceDecimal: "0.3" },
  });

export const DimensionsBody = z
  .array(DimensionBody, { message: "dimensions must be a list of {match, includedAmount?, price}" })
  .max(MAX_DIMENSIONS, `dimensions may list at most ${MAX_DIMENSIONS} entries`)
  .openapi({
    description: `METERED and SOFT QUOTA features whose meter has groupBy: prices per group, at most ${MAX_DIMENSIONS}. A group takes the first entry whose every match pair equals its value; a group no entry matches is priced by the entitlement's own includedAmount (SOFT: limit) and price. Each match names only groupBy properties (422 otherwise); no two entries have the same match.`,
    example: [
      { match: { model: "large", direction: "input" }, overagePriceDecimal: "0.3" },
      { match: { model: "large" }, includedAmount: 1000, overagePrice: 1 },
    ],
  });

// --- responses -----------------------------------------------------------

export const PricingSchema = z
  .union([
    z.object({
      model: z.enum(["graduated", "volume"]),
      tiers: z.array(
        z.object({
          upTo: z.number().int().nullable(),
          unitPrice: z.number().int().optional().openapi({ description: "Micro-cents per unit" }),
          unitPriceDecimal: z.string().optional().openapi({
            description: "Decimal micro-cents per unit (instead of unitPrice)",
            example: "0.15",
          }),
          flatFee: z.number().int().optional().openapi({ description: "Cents" }),
        }),
      ),
    }),
    z.object({
      model: z.literal("package"),
      packageSize: z.number().int(),
      packagePrice: z.number().int().openapi({ description: "Cents" }),
    }),
  ])
  .nullable();

export const DimensionSchema = z
  .object({
    match: z
      .record(z.string(), z.union([z.string(), z.number()]))
      .openapi({ example: { model: "large", direction: "input" } }),
    includedAmount: z.number().int(),
    overagePrice: z.number().int().nullable().openapi({ description: "Micro-cents per unit" }),
    overagePriceDecimal: z
      .string()
      .nullable()
      .openapi({ description: "Decimal micro-cents per unit", example: "0.15" }),
    pricing: PricingSchema,
  })
  .openapi("EntitlementDimension", {
    description: "The price of the groups whose groupBy values match (the first matching entry)",
  });
