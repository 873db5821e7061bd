import { MAX_PRICE_TRIAL_DAYS } from "@edge-platform/shared/billing/billing-period";
import { MAX_USAGE_AMOUNT } from "@edge-platform/shared/billing/entitlement-counter-protocol";
import {
  billingIntervals,
  catalogStatuses,
  featureTypes,
  limitBehaviors,
  resetPeriods,
} from "@edge-platform/shared/db/schema/catalog";
import { subscriptionStatuses } from "@edge-platform/shared/db/schema/subscriptions";
import { z } from "@hono/zod-openapi";
import { integer } from "../platform/index.ts";
import { CouponCodeSchema, usageThresholdsProblem } from "../pricing/index.ts";
import { MeterBody, MeterSchema } from "./meter-schemas.ts";
import {
  count,
  DimensionSchema,
  DimensionsBody,
  OveragePriceDecimalBody,
  PricingBody,
  PricingSchema,
} from "./price-schemas.ts";

// Request and response schemas of the catalog, subscription and
// entitlement routes.

export const PLAN_SLUG_PATTERN = /^[a-z0-9]+(?:-[a-z0-9]+)*$/;
export const LOOKUP_KEY_PATTERN = /^[a-z0-9]+(?:_[a-z0-9]+)*$/;
const METADATA_MAX_CHARS = 8192;

/** `true` or `false` (the literal strings); anything else is a 400. */
export const booleanQuery = (field: string) =>
  z
    .enum(["true", "false"], { message: `${field} must be true or false` })
    .optional()
    .transform((value) => value === "true")
    .openapi({ type: "boolean", example: false });

/** A field that may not be sent: it cannot change after creation. */
export const immutable = (field: string) =>
  z
    .unknown()
    .optional()
    .refine((value) => value === undefined, {
      message: `${field} is immutable and cannot be changed`,
    })
    .openapi({ description: `Not accepted: ${field} cannot change` });

export const CatalogMetadataSchema = z
  .record(z.string(), z.unknown(), { message: "metadata must be an object" })
  .refine((value) => JSON.stringify(value).length <= METADATA_MAX_CHARS, {
    message: `metadata must be at most ${METADATA_MAX_CHARS} characters of JSON`,
  })
  .openapi({ example: { tier: "starter" } });

const optionalText = (field: string, max: number) =>
  z
    .string({ message: `${field} must be a string` })
    .trim()
    .max(max, `${field} must be at most ${max} characters`)
    .nullable()
    .optional();

export const requiredName = z
  .string({ message: "name must be a string" })
  .trim()
  .min(1, "name should not be empty")
  .max(255, "name must be at most 255 characters");

export const PlanSlugSchema = z
  .string({ message: "slug must be a string" })
  .max(100, "slug must be at most 100 characters")
  .regex(PLAN_SLUG_PATTERN, "slug must be lowercase alphanumeric with hyphens only")
  .openapi({ example: "pro" });

export const LookupKeySchema = (field: string) =>
  z
    .string({ message: `${field} must be a string` })
    .max(100, `${field} must be at most 100 characters`)
    .regex(LOOKUP_KEY_PATTERN, `${field} must be lowercase alphanumeric with underscores only`)
    .openapi({ example: "api_calls" });

export const CreatePlanBody = z
  .object({
    name: requiredName,
    slug: PlanSlugSchema,
    description: optionalText("description", 1000),
    isPublic: z.boolean({ message: "isPublic must be a boolean" }).optional(),
    displayOrder: count("displayOrder").optional(),
    metadata: CatalogMetadataSchema.optional(),
  })
  .strict();

export const UpdatePlanBody = z
  .object({
    name: requiredName.optional(),
    slug: immutable("slug"),
    description: optionalText("description", 1000),
    status: z.enum(catalogStatuses, { message: "status must be ACTIVE or ARCHIVED" }).optional(),
    isPublic: z.boolean({ message: "isPublic must be a boolean" }).optional(),
    displayOrder: count("displayOrder").optional(),
    metadata: CatalogMetadataSchema.optional(),
  })
  .strict();

const trialDaysField = integer("trialDays", "an integer from 0 to 365", 0, MAX_PRICE_TRIAL_DAYS);

export const CreatePriceBody = z
  .object({
    interval: z.enum(billingIntervals, { message: "interval must be MONTHLY or ANNUALLY" }),
    amount: count("amount", "a whole number of cents (minor units)"),
    currency: z
      .string({ message: "currency must be a string" })
      .regex(/^[A-Za-z]{3}$/, "currency must be a 3-letter ISO 4217 code")
      .optional()
      .default("usd"),
    trialDays: trialDaysField.optional(),
    usageThresholds: z
      .array(
        z
          .object({
            amount: z
              .number({ message: "usageThresholds[].amount must be a whole number of cents" })
              .int("usageThresholds[].amount must be a whole number of cents")
              .min(1, "usageThresholds[].amount must be at least 1 cent")
              .max(1_000_000_000_000, "usageThresholds[].amount must be at most 10^12 cents"),
            recurring: z
              .boolean({ message: "usageThresholds[].recurring must be a boolean" })
              .optional(),
          })
          .strict(),
        { message: "usageThresholds must be a list of {amount, recurring?}" },
      )
      .min(1, "usageThresholds must list at least one threshold")
      .max(20, "usageThresholds may list at most 20 thresholds")
      .superRefine((thresholds, context) => {
        const problem = usageThresholdsProblem(thresholds);
        if (problem) context.addIssue({ code: "custom", message: problem });
      })
      .optional()
      .openapi({
        description:
          "Progressive billing: cents of priced usage in a period at which the usage so far is invoiced at once (a PROGRESSIVE invoice). Fixed amounts strictly increase; at most one `recurring`, the last, repeating every `amount` after the last fixed one.",
      }),
    prepaid: z.boolean({ message: "prepaid must be a boolean" }).optional().openapi({
      description:
        "Prepaid: a consume of a priced feature whose cost the tenant's credit balance cannot pay for is refused (402 CREDITS_EXHAUSTED). Default false.",
    }),
  })
  .strict();

/** PATCH of a price: set or clear its trial, and/or deactivate it for good (`isActive: false`). */
export const UpdatePriceBody = z
  .object({
    isActive: z
      .literal(false, { message: "isActive can only be set to false (deactivation is permanent)" })
      .optional(),
    trialDays: trialDaysField.nullable().optional(),
  })
  .strict()
  .refine((body) => Object.keys(body).length > 0, {
    message: "Give isActive: false and/or trialDays",
  })
  .openapi("UpdatePlanPriceRequest");

export const CreateFeatureBody = z
  .object({
    name: requiredName,
    lookupKey: LookupKeySchema("lookupKey"),
    type: z.enum(featureTypes, { message: "type must be BOOLEAN, QUOTA or METERED" }),
    unit: optionalText("unit", 50),
    description: optionalText("description", 1000),
    metadata: CatalogMetadataSchema.optional(),
    meter: MeterBody.nullable().optional(),
  })
  .strict();

export const UpdateFeatureBody = z
  .object({
    name: requiredName.optional(),
    lookupKey: immutable("lookupKey"),
    type: immutable("type"),
    unit: optionalText("unit", 50),
    description: optionalText("description", 1000),
    status: z.enum(catalogStatuses, { message: "status must be ACTIVE or ARCHIVED" }).optional(),
    metadata: CatalogMetadataSchema.optional(),
    meter: MeterBody.nullable().optional().openapi({
      description:
        "A new meter (replaces the whole meter); null: back to the default. The aggregation cannot change once the feature has usage (409).",
    }),
  })
  .strict();

const termFields = {
  value: z.boolean({ message: "value must be a boolean" }).nullable().optional(),
  limit: count("limit").nullable().optional(),
  limitBehavior: z
    .enum(limitBehaviors, { message: "limitBehavior must be HARD or SOFT" })
    .nullable()
    .optional(),
  overagePrice: count("overagePrice", "a whole number of micro-cents (1 cent = 100 micro-cents)")
    .nullable()
    .optional(),
  includedAmount: count("includedAmount").nullable().optional(),
  resetPeriod: z
    .enum(resetPeriods, { message: "resetPeriod must be MONTHLY, ANNUALLY or NEVER" })
    .nullable()
    .optional(),
  pricing: PricingBody.nullable().optional(),
  overagePriceDecimal: OveragePriceDecimalBody.nullable().optional(),
  dimensions: DimensionsBody.nullable().optional(),
};

export const CreateEntitlementBody = z
  .object({
    featureId: z
      .string({ message: "featureId must be a string" })
      .regex(
        // Both cases without a regex flag: the pattern is published in the OpenAPI document,
        // where a JavaScript flag would become part of the JSON Schema pattern.
        /^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$/,
        "featureId must be a valid UUID",
      )
      .transform((value) => value.toLowerCase()),
    ...termFields,
  })
  .strict();

export const UpdateEntitlementBody = z
  .object({ featureId: immutable("featureId"), ...termFields })
  .strict();

export const SubscribeBody = z
  .object({
    planId: z.uuid({ message: "planId must be a valid UUID" }),
    priceId: z.uuid({ message: "priceId must be a valid UUID" }),
    couponCode: CouponCodeSchema.optional().openapi({
      description: "A coupon to redeem on the new subscription (one active coupon per tenant)",
    }),
  })
  .strict();

export const CancelBody = z
  .object({ atPeriodEnd: z.boolean({ message: "atPeriodEnd must be a boolean" }).optional() })
  .strict();

export const ConsumeBody = z
  .object({
    amount: integer(
      "amount",
      `a positive integer (at most ${MAX_USAGE_AMOUNT})`,
      1,
      MAX_USAGE_AMOUNT,
    )
      .optional()
      .default(1),
    properties: z
      .record(z.string(), z.unknown(), { message: "properties must be an object" })
      .optional()
      .openapi({
        description:
          "The usage's properties, for the feature's meter (at most 20 keys [a-z0-9_]{1,64}; strings of at most 256 characters or finite numbers). A UNIQUE_COUNT quota counts distinct values of its property: a value already counted in the window is admitted with no change (`consumed: 0`), a new one takes one unit. A bad key or value, or a property the meter needs and does not find: 422.",
        example: { user_id: "u-7" },
      }),
  })
  .strict();

export const FeatureKeyParam = z.object({ featureKey: LookupKeySchema("featureKey") });

// --- responses -----------------------------------------------------------

const PriceSummarySchema = z.object({
  id: z.string(),
  interval: z.enum(billingIntervals),
  amount: z.number().int(),
  currency: z.string(),
  isActive: z.boolean(),
});

export const PlanSchema = z
  .object({
    id: z.string(),
    name: z.string(),
    slug: z.string(),
    description: z.string().nullable(),
    status: z.enum(catalogStatuses),
    isPublic: z.boolean(),
    displayOrder: z.number().int(),
    metadata: z.record(z.string(), z.unknown()),
    createdAt: z.string(),
    updatedAt: z.string(),
    prices: z.array(PriceSummarySchema),
  })
  .openapi("Plan");

export const PriceSchema = z
  .object({
    id: z.string(),
    planId: z.string(),
    interval: z.enum(billingIntervals),
    amount: z.number().int().openapi({ description: "Minor units (cents)" }),
    currency: z.string(),
    isActive: z.boolean(),
    trialDays: z.number().int().nullable().openapi({
      description:
        "Free trial on a tenant's first subscription to this price (one trial per tenant, ever)",
    }),
    prepaid: z.boolean().openapi({
      description: "Priced usage must be paid for by the tenant's credit balance (402 otherwise)",
    }),
    usageThresholds: z
      .array(z.object({ amount: z.number().int(), recurring: z.boolean().optional() }))
      .nullable()
      .openapi({ description: "Progressive billing thresholds (cents of priced usage)" }),
    createdAt: z.string(),
    updatedAt: z.string(),
  })
  .openapi("PlanPrice");

export const FeatureSchema = z
  .object({
    id: z.string(),
    name: z.string(),
    lookupKey: z.string(),
    type: z.enum(featureTypes),
    unit: z.string().nullable(),
    description: z.string().nullable(),
    status: z.enum(catalogStatuses),
    metadata: z.record(z.string(), z.unknown()),
    meter: MeterSchema,
    createdAt: z.string(),
    updatedAt: z.string(),
  })
  .openapi("Feature");

const termsSchema = {
  value: z.boolean().nullable(),
  limit: z.number().int().nullable(),
  limitBehavior: z.enum(limitBehaviors).nullable(),
  overagePrice: z.number().int().nullable().openapi({ description: "Micro-cents per unit" }),
  includedAmount: z.number().int().nullable(),
  resetPeriod: z.enum(resetPeriods).nullable(),
  pricing: PricingSchema.openapi({
    description: "Tiered or package pricing; null: per unit at overagePrice",
  }),
  overagePriceDecimal: z.string().nullable().openapi({
    description: "Decimal micro-cents per unit, instead of overagePrice",
    example: "0.15",
  }),
  dimensions: z.array(DimensionSchema).nullable().openapi({
    description: "Prices per group of the feature's meter (groupBy values); null: none",
  }),
};

export const EntitlementSchema = z
  .object({
    id: z.string(),
    planId: z.string(),
    featureId: z.string(),
    ...termsSchema,
    createdAt: z.string(),
    updatedAt: z.string(),
    feature: z.object({
      id: z.string(),
      name: z.string(),
      lookupKey: z.string(),
      type: z.enum(featureTypes),
      unit: z.string().nullable(),
    }),
  })
  .openapi("PlanEntitlement");

export const SubscriptionSchema = z
  .object({
    id: z.string(),
    tenantId: z.string(),
    status: z.enum(subscriptionStatuses),
    startedAt: z.string(),
    currentPeriodStart: z.string(),
    currentPeriodEnd: z.string(),
    billingAnchor: z.number().int(),
    trialEndsAt: z.string().nullable(),
    cancelAtPeriodEnd: z.boolean(),
    cancelledAt: z.string().nullable(),
    endedAt: z.string().nullable(),
    pausedAt: z.string().nullable(),
    createdAt: z.string(),
    updatedAt: z.string(),
    plan: z.object({ id: z.string(), name: z.string(), slug: z.string() }),
    price: z.object({
      id: z.string(),
      interval: z.enum(billingIntervals),
      amount: z.number().int(),
      currency: z.string(),
    }),
    entitlementSnapshots: z.array(
      z.object({
        featureLookupKey: z.string(),
        featureType: z.enum(featureTypes),
        ...termsSchema,
        meter: MeterSchema.openapi({
          description: "The feature's meter when the subscription started",
        }),
      }),
    ),
  })
  .openapi("Subscription");

export const CheckSchema = z
  .object({
    allowed: z.boolean(),
    feature: z.string(),
    type: z.enum(featureTypes).nullable(),
    limit: z.number().int().nullable(),
    used: z.number().int().nullable(),
    remaining: z.number().int().nullable(),
    overage: z.number().int().nullable(),
    resetAt: z.string().nullable(),
    reason: z.string().nullable(),
    code: z.literal("CREDITS_EXHAUSTED").optional().openapi({
      description:
        "Present when a prepaid subscription's credit balance cannot pay for one more unit (then `allowed` is false)",
    }),
    creditBalance: z.number().int().optional().openapi({
      description:
        "Cents of credit that apply to this priced feature (present while the tenant has credit grants, and always on a prepaid subscription)",
    }),
  })
  .openapi("EntitlementCheck");

export const ConsumeSchema = z
  .object({
    allowed: z.literal(true),
    feature: z.string(),
    type: z.enum(featureTypes),
    consumed: z.number().int(),
    used: z.number().int(),
    limit: z.number().int(),
    remaining: z.number().int(),
    overage: z.boolean(),
    resetAt: z.string().nullable(),
  })
  .openapi("EntitlementConsume");
