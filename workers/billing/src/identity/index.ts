// The identity capability's only entry for the rest of the worker (what it owns: README.md).
export { adminTenantRoutes } from "./admin-tenant-routes.ts";
export { apiKeyRoutes } from "./api-key-routes.ts";
export { ApiKeyService } from "./api-key-service.ts";
export { authRoutes } from "./auth-routes.ts";
export type { IdentityRouteServices } from "./route-services.ts";
export { SessionService } from "./session-service.ts";
export { tenantRoutes } from "./tenant-routes.ts";
export { TenantService, tenantCancellationHooks } from "./tenant-service.ts";
export { userRoutes } from "./user-routes.ts";
export { UserService } from "./user-service.ts";
