import {
  MAX_FILTER_PROPERTIES,
  MAX_FILTER_VALUES,
  MAX_GROUP_BY,
  MAX_PROPERTY_TEXT,
  meterAggregations,
  PROPERTY_KEY_PATTERN,
} from "@edge-platform/shared/billing/meter";
import { z } from "@hono/zod-openapi";

// Request and response schemas of a feature's meter (shared/src/billing/meter.ts).

const AGGREGATION_RULES =
  "How the counted events add up in a usage window: SUM of `property` (of the event's `amount` without one), COUNT of events, UNIQUE_COUNT of distinct `property` values, MAX, MIN, AVG or LATEST of `property`, WEIGHTED_SUM of `property` as a level held over time (100 held for half the window bills 50). AVG and WEIGHTED_SUM give fractional quantities.";

const propertyValue = z.union([z.string().max(MAX_PROPERTY_TEXT), z.number()]);

/**
 * A meter as a request sends it. It mirrors meterSchema (the feature
 * service checks it with meterSchema and resolveMeter as well); a body
 * whose only problems are in `meter` is answered 422 (feature-routes.ts).
 */
export const MeterBody = z
  .object({
    aggregation: z
      .enum(meterAggregations, {
        message: `meter.aggregation must be one of: ${meterAggregations.join(", ")}`,
      })
      .openapi({ description: AGGREGATION_RULES, example: "SUM" }),
    property: z
      .string({ message: "meter.property must be a string or null" })
      .regex(PROPERTY_KEY_PATTERN, "meter.property must match [a-z0-9_]{1,64}")
      .nullable()
      .optional()
      .openapi({
        description:
          "The event property aggregated: required by UNIQUE_COUNT, MAX, MIN, AVG, LATEST and WEIGHTED_SUM; not used by COUNT; null or absent with SUM: the event's `amount`",
        example: "tokens",
      }),
    filters: z
      .record(z.string(), z.array(propertyValue), {
        message: "meter.filters must be an object of value lists",
      })
      .optional()
      .openapi({
        description: `Only events whose property has one of the listed values count, for every listed property (at most ${MAX_FILTER_PROPERTIES} properties, 1 to ${MAX_FILTER_VALUES} values each; values compare as strings)`,
        example: { region: ["eu", "us"] },
      }),
    groupBy: z
      .array(z.string(), { message: "meter.groupBy must be a list of property names" })
      .optional()
      .openapi({
        description: `Up to ${MAX_GROUP_BY} properties whose values split the usage into groups, which an entitlement's \`dimensions\` may price apart`,
        example: ["model", "direction"],
      }),
  })
  .strict()
  .openapi("MeterInput", {
    description:
      "How the feature's usage is measured from its events (`amount` and `properties`). Not for BOOLEAN features. Absent or null: SUM of `amount`, no filter, no groups. The aggregation cannot change once the feature has usage (409); filters, groupBy and property can, for new subscribers (existing ones keep the meter they subscribed with).",
    example: {
      aggregation: "SUM",
      property: "tokens",
      filters: { region: ["eu", "us"] },
      groupBy: ["model", "direction"],
    },
  });

export const MeterSchema = z
  .object({
    aggregation: z.enum(meterAggregations).openapi({ description: AGGREGATION_RULES }),
    property: z.string().nullable().openapi({
      description: "The event property aggregated; null: the event's `amount` (or COUNT)",
    }),
    filters: z
      .record(z.string(), z.array(z.union([z.string(), z.number()])))
      .openapi({ description: "Only events whose properties have one of the listed values count" }),
    groupBy: z
      .array(z.string())
      .openapi({ description: "Properties whose values split the usage into groups" }),
  })
  .openapi("Meter", {
    description:
      "How a feature's usage is measured from its events; a feature given none has the default: SUM of `amount`, no filter, no groups",
    example: { aggregation: "SUM", property: null, filters: {}, groupBy: [] },
  });
