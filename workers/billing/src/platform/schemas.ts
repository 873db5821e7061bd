import { membershipRoles, tenantStatuses } from "@edge-platform/shared/db/schema/identity";
import { z } from "@hono/zod-openapi";
import { SLUG_MAX, SLUG_MIN, SLUG_PATTERN } from "./domain/slug.ts";

export const EmailSchema = z
  .string()
  .trim()
  .toLowerCase()
  .max(255, "email must be at most 255 characters")
  .pipe(z.email({ message: "email must be an email" }))
  .openapi({ example: "jane@example.com" });

const PASSWORD_COMPLEXITY =
  "must contain at least one uppercase letter, one lowercase letter, and one number";

/** 8-72 characters with an upper-case letter, a lower-case letter and a digit. */
export const newPassword = (field: string) =>
  z
    .string()
    .min(8, `${field} must be at least 8 characters`)
    .max(72, `${field} must be at most 72 characters`)
    .regex(/[A-Z]/, `${field} ${PASSWORD_COMPLEXITY}`)
    .regex(/[a-z]/, `${field} ${PASSWORD_COMPLEXITY}`)
    .regex(/[0-9]/, `${field} ${PASSWORD_COMPLEXITY}`)
    .openapi({ example: "Sup3rSecret" });

export const requiredString = (field: string, max: number) =>
  z
    .string()
    .trim()
    .min(1, `${field} should not be empty`)
    .max(max, `${field} must be at most ${max} characters`);

export const SlugSchema = (field: string) =>
  z
    .string()
    .min(SLUG_MIN, `${field} must be at least ${SLUG_MIN} characters`)
    .max(SLUG_MAX, `${field} must be at most ${SLUG_MAX} characters`)
    .regex(
      SLUG_PATTERN,
      `${field} must start with a letter and contain only lowercase letters, numbers, and hyphens`,
    )
    .openapi({ example: "acme" });

export const MetadataSchema = z.record(z.string(), z.unknown()).openapi({ example: {} });

export const RoleSchema = z.enum(membershipRoles);

export const UuidParam = (name: string) =>
  z
    .string()
    .regex(
      // Both cases without a regex flag: the pattern is published in the OpenAPI document,
      // where a JavaScript flag would become part of the JSON Schema pattern.
      /^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$/,
      `${name} must be a valid UUID`,
    )
    .transform((value) => value.toLowerCase())
    .openapi({ param: { name, in: "path" }, example: "00000000-0000-4000-8000-00000000a001" });

/** A query-string integer from 1 (up to `max`), e.g. a page number or a page size. */
export const positiveInteger = (field: string, max?: number) =>
  z
    .string()
    .regex(/^\d{1,9}$/, `${field} must be a positive integer`)
    .transform(Number)
    .pipe(
      max === undefined
        ? z.number().int().min(1, `${field} must be at least 1`)
        : z
            .number()
            .int()
            .min(1, `${field} must be at least 1`)
            .max(max, `${field} must be at most ${max}`),
    );

/** `page >= 1` (default 1) and `1 <= limit <= 100` (default 20); anything else is a 400. */
export const PageQuerySchema = z
  .object({
    page: positiveInteger("page").optional().default(1).openapi({ type: "integer", example: 1 }),
    limit: positiveInteger("limit", 100)
      .optional()
      .default(20)
      .openapi({ type: "integer", example: 20 }),
  })
  .strict();

/** An amount of money in integer cents. */
export const CentsSchema = z.number().int().openapi({ description: "Integer cents" });

/** An optional query filter over a fixed set of values, with a message that lists them. */
export const enumQuery = <T extends readonly [string, ...string[]]>(field: string, values: T) =>
  z.enum(values, { message: `${field} must be one of: ${values.join(", ")}` }).optional();

export const PageMetaSchema = z.object({
  total: z.number().int(),
  page: z.number().int(),
  limit: z.number().int(),
  totalPages: z.number().int(),
});

/** One page of a list: the items and where the page stands. */
export const pageOf = <T extends z.ZodType>(item: T) =>
  z.object({ data: z.array(item), meta: PageMetaSchema });

export const MessageSchema = z.object({ message: z.string() });

export const ErrorSchema = z
  .object({
    statusCode: z.number().int(),
    message: z.union([z.string(), z.array(z.string())]),
    error: z.string(),
    correlationId: z.string(),
    timestamp: z.string(),
    path: z.string(),
  })
  .openapi("Error");

export const CreditsExhaustedSchema = ErrorSchema.extend({
  code: z.literal("CREDITS_EXHAUSTED"),
  creditBalance: z
    .number()
    .int()
    .openapi({ description: "Cents of credit that apply to the feature" }),
}).openapi("CreditsExhaustedError");

const errorResponse = (description: string) => ({
  description,
  content: { "application/json": { schema: ErrorSchema } },
});

/** The failures common to routes, by status, for the OpenAPI document. */
export const errors = {
  400: errorResponse("Validation failed, malformed JSON, or a bad x-tenant-id header"),
  401: errorResponse("Missing, invalid or expired credentials"),
  402: {
    description:
      "Prepaid: the credit balance that applies cannot pay for the units (`code: CREDITS_EXHAUSTED`); nothing was taken",
    content: { "application/json": { schema: CreditsExhaustedSchema } },
  },
  403: errorResponse("Not a member, role too low, or tenant not ACTIVE"),
  404: errorResponse("Not found"),
  409: errorResponse("Conflicts with the current state"),
  422: errorResponse("Well-formed but refers to something that does not exist or does not fit"),
  429: errorResponse("Too many attempts; see Retry-After"),
  503: errorResponse("Authentication is not configured (JWT_SECRET missing or short)"),
} as const;

/**
 * Who may call a route (its security and middleware decide), with the error
 * responses that deciding it can answer with. This table is the one place
 * that says which errors an authentication implies: `withAccessErrors` adds
 * them to every route of that kind, so no route lists them by hand and none
 * can leave one out or describe it differently.
 */
const ACCESS_ERRORS = {
  /** Anyone: no credentials are required. */
  public: [],
  /** A signed-in user (bearer access token): 401 without valid credentials. */
  signedIn: [401],
  /** A signed-in platform admin: 401, then 403 for any other user. */
  platformAdmin: [401, 403],
  /**
   * A signed-in member of the `x-tenant-id` tenant in a role the route
   * allows (and platform admins where the route lets them in): 401, then 403.
   */
  tenantMember: [401, 403],
  /** A tenant's API key: 401 for a missing, invalid or expired key, 403 for a tenant not ACTIVE. */
  apiKey: [401, 403],
  /** Either a tenant's API key or a signed-in member with `x-tenant-id`. */
  memberOrApiKey: [401, 403],
} as const satisfies Record<string, readonly (keyof typeof errors)[]>;

type RouteCaller = keyof typeof ACCESS_ERRORS;

/** Who may call a route, and whether their requests are rate limited (429 on top). */
type RouteAccess = RouteCaller | { caller: RouteCaller; rateLimited: true };

/** Access for a route that also counts its caller's requests and answers 429 past the limit. */
export const rateLimited = <C extends RouteCaller>(caller: C) =>
  ({ caller, rateLimited: true }) as const;

type CallerErrorStatus<C extends RouteCaller> =
  (typeof ACCESS_ERRORS)[C] extends readonly (infer S)[] ? S : never;

type AccessErrorStatus<A extends RouteAccess> = A extends RouteCaller
  ? CallerErrorStatus<A>
  : A extends { caller: infer C extends RouteCaller }
    ? CallerErrorStatus<C> | 429
    : never;

/**
 * A route's `responses`: the ones it lists (its successes and the errors of
 * its own, such as a 400, 404 or 409) plus the error responses its access
 * implies. Listing an implied status by hand as well does not compile.
 */
export function withAccessErrors<
  A extends RouteAccess,
  R extends Record<number, unknown> & { [S in AccessErrorStatus<A>]?: never },
>(access: A, responses: R): R & Pick<typeof errors, AccessErrorStatus<A>> {
  const caller: RouteCaller = typeof access === "string" ? access : access.caller;
  const statuses: (keyof typeof errors)[] = [...ACCESS_ERRORS[caller]];
  if (typeof access !== "string" && access.rateLimited) statuses.push(429);
  const implied = Object.fromEntries(statuses.map((status) => [status, errors[status]]));
  return { ...responses, ...implied } as R & Pick<typeof errors, AccessErrorStatus<A>>;
}

export const TenantHeaderSchema = z.object({
  "x-tenant-id": z.string().openapi({ example: "00000000-0000-4000-8000-00000000a001" }),
});

export const SessionUserSchema = z
  .object({ id: z.string(), email: z.string(), firstName: z.string(), lastName: z.string() })
  .openapi("SessionUser");

export const UserSchema = z
  .object({
    id: z.string(),
    email: z.string(),
    firstName: z.string(),
    lastName: z.string(),
    isActive: z.boolean(),
    isPlatformAdmin: z.boolean(),
    createdAt: z.string(),
    updatedAt: z.string(),
  })
  .openapi("User");

export const PublicProfileSchema = z
  .object({ id: z.string(), firstName: z.string(), lastName: z.string() })
  .openapi("PublicProfile");

export const TenantSchema = z
  .object({
    id: z.string(),
    name: z.string(),
    slug: z.string(),
    status: z.enum(tenantStatuses),
    metadata: MetadataSchema,
    createdAt: z.string(),
    updatedAt: z.string(),
  })
  .openapi("Tenant");

export const TenantWithRoleSchema = TenantSchema.extend({ role: RoleSchema }).openapi(
  "TenantWithRole",
);

export const json = <T extends z.ZodType>(schema: T, description: string) => ({
  description,
  content: { "application/json": { schema } },
});

export const jsonBody = <T extends z.ZodType>(schema: T) => ({
  required: true,
  content: { "application/json": { schema } },
});

export const bearerSecurity = [{ bearerAuth: [] }];

/** A whole number from 0 to the largest exact integer. */
/**
 * An integer in [min, max]. Integrality is a refinement rather than `.int()`
 * so that the message is ours ("must be a whole number of cents") instead of
 * the generic type message.
 */
export const integer = (
  field: string,
  what: string,
  min: number,
  max: number,
  minMessage = `${field} must be ${what}`,
) =>
  z
    .number({ message: `${field} must be ${what}` })
    .min(min, minMessage)
    .max(
      max,
      max === Number.MAX_SAFE_INTEGER ? `${field} is too large` : `${field} must be ${what}`,
    )
    .refine(Number.isInteger, { message: `${field} must be ${what}` });
