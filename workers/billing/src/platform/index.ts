// The platform capability's only entry for the rest of the worker (what it owns: README.md).
export {
  type ApiKeyRow,
  findMembershipWithTenant,
  findTenantById,
  findUserById,
  type TenantRow,
  type UserRow,
} from "./access-storage.ts";
export { apiKeyVerifier, authenticateApiKey } from "./api-key.ts";
export { type ApiKeyVerifier, isolateApiKeys } from "./api-key-verification.ts";
export { API_PREFIX, API_VERSION } from "./api-version.ts";
export type {
  AppEnv,
  AppVariables,
  BillingContext,
  TenantContext,
  TenantScoped,
} from "./app-env.ts";
export { authenticate, requireSigningKey } from "./auth.ts";
export { inBackground } from "./background.ts";
export { signAccessToken } from "./domain/access-token.ts";
export { effectiveApiKeyStatus, generateApiKey, looksLikeApiKey } from "./domain/api-key.ts";
export {
  IDEMPOTENCY_IN_FLIGHT,
  IDEMPOTENCY_KEY_HEADER,
  IDEMPOTENCY_KEY_REUSED,
  IDEMPOTENT_REPLAYED_HEADER,
} from "./domain/idempotency.ts";
export {
  centsToMicroCents,
  divideRoundHalfUp,
  formatCents,
  MICRO_CENTS_PER_CENT,
  prorateCents,
  sumCents,
  toSafeInteger,
  usageAmountCents,
} from "./domain/money.ts";
export { type PageRequest, pageMeta, pageOffset } from "./domain/pagination.ts";
export { hashPassword, PASSWORD_ITERATIONS, verifyPassword } from "./domain/password.ts";
export {
  EVERY_ROLE,
  GRANTABLE_ROLES,
  MANAGERS,
  type MembershipRole,
  MONEY_READERS,
  mayManageMembership,
  roleRequirementMessage,
} from "./domain/roles.ts";
export {
  type ScheduledRunRecord,
  type ScheduledTaskResults,
  scheduledRunRecord,
  type TenantScope,
} from "./domain/scheduled-run.ts";
export { base64, base64Url, fromBase64, randomToken, sha256Hex } from "./domain/secrets.ts";
export { SLUG_MAX, SLUG_PATTERN, slugFromName, withRandomSuffix } from "./domain/slug.ts";
export { timeOrderedUuid } from "./domain/time-ordered-id.ts";
export {
  SIGNATURE_HEADER,
  signWebhook,
  verifyWebhookSignature,
} from "./domain/webhook-signature.ts";
export { type CallerTenant, callerTenant, memberOrApiKey } from "./entitlement-caller.ts";
export { healthRoutes } from "./health-routes.ts";
export { counterIdempotency, idempotencyKeys, withholdOnReplay } from "./idempotency.ts";
export { pruneIdempotencyKeys } from "./idempotency-prune.ts";
export type { CounterIdempotency } from "./idempotency-state.ts";
export { LoggingMailSender, type MailSender, redactEmail } from "./mail-sender.ts";
export {
  documentIdempotency,
  IDEMPOTENCY_PARAMETER_NAME,
  idempotencyKeyParameter,
} from "./openapi-idempotency.ts";
export { isPlatformAdmin, optionalAuthentication, requirePlatformAdmin } from "./platform-admin.ts";
export { enforceEmailLimit, enforceIpLimit, enforceLimit, LIMITS } from "./rate-limits.ts";
export { D1_BOOKMARK_HEADER, replicaReads } from "./replica-reads.ts";
export {
  createRouter,
  describeIssue,
  optionalJsonBody,
  pdfAttachment,
  validationHook,
} from "./router.ts";
export {
  bearerSecurity,
  CentsSchema,
  EmailSchema,
  ErrorSchema,
  enumQuery,
  errors,
  integer,
  json,
  jsonBody,
  MessageSchema,
  MetadataSchema,
  newPassword,
  PageQuerySchema,
  PublicProfileSchema,
  pageOf,
  positiveInteger,
  RoleSchema,
  rateLimited,
  requiredString,
  SessionUserSchema,
  SlugSchema,
  TenantHeaderSchema,
  TenantSchema,
  TenantWithRoleSchema,
  UserSchema,
  UuidParam,
  withAccessErrors,
} from "./schemas.ts";
export { SingleFlight } from "./single-flight.ts";
export {
  billingContext,
  moneyReaders,
  requireMoneyReader,
  requireSettlementActor,
  requireWebhookManager,
  requireWritableBillingTenant,
  requireWritableTenant,
  tenantContext,
  tenantMembers,
  tenantWriters,
} from "./tenant.ts";
export { TENANT_HEADER, UUID_PATTERN } from "./tenant-header.ts";
