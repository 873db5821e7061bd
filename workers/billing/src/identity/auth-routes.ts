import { createRoute, z } from "@hono/zod-openapi";
import {
  authenticate,
  bearerSecurity,
  createRouter,
  EmailSchema,
  enforceEmailLimit,
  enforceIpLimit,
  enforceLimit,
  errors,
  inBackground,
  json,
  jsonBody,
  LIMITS,
  MessageSchema,
  MetadataSchema,
  newPassword,
  rateLimited,
  requiredString,
  SessionUserSchema,
  SlugSchema,
  UserSchema,
  withAccessErrors,
} from "../platform/index.ts";
import type { IdentityRouteServices } from "./route-services.ts";
import { safeUser } from "./views.ts";

const RegisterBody = z
  .object({
    email: EmailSchema,
    password: newPassword("password"),
    firstName: requiredString("firstName", 100),
    lastName: requiredString("lastName", 100),
    tenantName: requiredString("tenantName", 255),
    tenantSlug: SlugSchema("tenantSlug").optional(),
    tenantMetadata: MetadataSchema.optional(),
  })
  .strict()
  .openapi("RegisterRequest");

const LoginBody = z
  .object({
    email: EmailSchema,
    password: z.string().min(1, "password should not be empty").max(1024),
  })
  .strict()
  .openapi("LoginRequest");

const RefreshBody = z
  .object({ refreshToken: z.string().min(1, "refreshToken should not be empty").max(512) })
  .strict()
  .openapi("RefreshRequest");

const TokenPairSchema = z
  .object({ accessToken: z.string(), refreshToken: z.string() })
  .openapi("TokenPair");

const SessionSchema = TokenPairSchema.extend({ user: SessionUserSchema }).openapi("Session");

const RegistrationSchema = SessionSchema.extend({
  tenant: z.object({ id: z.string(), name: z.string(), slug: z.string() }),
}).openapi("Registration");

const FORGOT_MESSAGE = "If an account exists with this email, a reset link has been sent";

const route = createRoute;

const register = route({
  method: "post",
  path: "/auth/register",
  tags: ["auth"],
  summary: "Creates a user, their tenant and an OWNER membership; returns a session",
  description: `Limited to ${LIMITS.registerPerIp.limit} per minute per IP.`,
  request: { body: jsonBody(RegisterBody) },
  responses: withAccessErrors(rateLimited("public"), {
    201: json(RegistrationSchema, "Registered"),
    400: errors[400],
    409: errors[409],
    503: errors[503],
  }),
});

const login = route({
  method: "post",
  path: "/auth/login",
  tags: ["auth"],
  summary: "Exchanges email and password for a token pair",
  description: `Limited to ${LIMITS.loginPerIp.limit} per minute per IP and ${LIMITS.loginPerEmail.limit} per minute per email.`,
  request: { body: jsonBody(LoginBody) },
  responses: withAccessErrors(rateLimited("public"), {
    200: json(SessionSchema, "Signed in"),
    400: errors[400],
    401: errors[401],
    503: errors[503],
  }),
});

const refresh = route({
  method: "post",
  path: "/auth/refresh",
  tags: ["auth"],
  summary: "Rotates a refresh token; reusing a spent one ends its session",
  description:
    "The presented refresh token is spent and a new pair returned. Presented again within 30 seconds of that first use (two tabs, or a page and a download, refreshing at once), it answers as the first use did: a fresh access token and the same new refresh token, and nothing is ended. Presented after those 30 seconds, or after its successor was itself spent or revoked, it is treated as stolen: 401, that session (every refresh token rotated from the same sign-in) is ended and an `auth.sessions_revoked` audit row with reason `refresh_token_reused` is written; the user's other sessions and API keys are untouched.",
  request: { body: jsonBody(RefreshBody) },
  responses: withAccessErrors(rateLimited("public"), {
    200: json(
      TokenPairSchema,
      "New pair; the presented refresh token is spent (within 30 s it answers with the same new refresh token)",
    ),
    400: errors[400],
    401: errors[401],
    503: errors[503],
  }),
});

const logout = route({
  method: "post",
  path: "/auth/logout",
  tags: ["auth"],
  summary: "Revokes one of the caller's refresh tokens",
  security: bearerSecurity,
  middleware: [authenticate()] as const,
  request: { body: jsonBody(RefreshBody) },
  responses: withAccessErrors("signedIn", {
    200: json(MessageSchema, "Logged out"),
    400: errors[400],
  }),
});

const logoutAll = route({
  method: "post",
  path: "/auth/logout-all",
  tags: ["auth"],
  summary: "Ends every session of the caller (refresh and access tokens)",
  security: bearerSecurity,
  middleware: [authenticate()] as const,
  responses: withAccessErrors("signedIn", { 200: json(MessageSchema, "All sessions ended") }),
});

const me = route({
  method: "get",
  path: "/auth/me",
  tags: ["auth"],
  summary: "The signed-in user",
  security: bearerSecurity,
  middleware: [authenticate()] as const,
  responses: withAccessErrors("signedIn", {
    200: json(UserSchema, "The caller"),
    503: errors[503],
  }),
});

const forgotPassword = route({
  method: "post",
  path: "/auth/forgot-password",
  tags: ["auth"],
  summary: "Sends a password-reset token; the same answer whether the account exists or not",
  description:
    "The token reaches the user through the mail sender. Only when ENVIRONMENT is `development` does the response carry it as `resetToken`.",
  request: { body: jsonBody(z.object({ email: EmailSchema }).strict()) },
  responses: withAccessErrors(rateLimited("public"), {
    200: json(MessageSchema.extend({ resetToken: z.string().nullable().optional() }), "Accepted"),
    400: errors[400],
  }),
});

const resetPassword = route({
  method: "post",
  path: "/auth/reset-password",
  tags: ["auth"],
  summary: "Sets a new password with a reset token and ends every session",
  request: {
    body: jsonBody(
      z
        .object({
          token: z.string().min(1, "token should not be empty").max(512),
          newPassword: newPassword("newPassword"),
        })
        .strict(),
    ),
  },
  responses: withAccessErrors(rateLimited("public"), {
    200: json(MessageSchema, "Password reset"),
    400: errors[400],
  }),
});

const changePassword = route({
  method: "post",
  path: "/auth/change-password",
  tags: ["auth"],
  summary: "Changes the password, ends the other sessions and returns a new pair",
  security: bearerSecurity,
  middleware: [authenticate()] as const,
  request: {
    body: jsonBody(
      z
        .object({
          currentPassword: z.string().min(1, "currentPassword should not be empty").max(1024),
          newPassword: newPassword("newPassword"),
        })
        .strict(),
    ),
  },
  responses: withAccessErrors(rateLimited("signedIn"), {
    200: json(MessageSchema.extend(TokenPairSchema.shape), "Password changed"),
    400: errors[400],
  }),
});

export const authRoutes = ({ sessionService }: IdentityRouteServices) =>
  createRouter()
    .openapi(register, async (c) => {
      const body = c.req.valid("json");
      const service = sessionService(c);
      await enforceIpLimit(c, LIMITS.registerPerIp);
      return c.json(await service.register(body), 201);
    })
    .openapi(login, async (c) => {
      const { email, password } = c.req.valid("json");
      const service = sessionService(c);
      await enforceIpLimit(c, LIMITS.loginPerIp);
      await enforceEmailLimit(c, LIMITS.loginPerEmail, email);
      return c.json(await service.login(email, password), 200);
    })
    .openapi(refresh, async (c) => {
      const { refreshToken } = c.req.valid("json");
      const service = sessionService(c);
      await enforceIpLimit(c, LIMITS.refreshPerIp);
      return c.json(await service.refresh(refreshToken), 200);
    })
    .openapi(logout, async (c) => {
      const { refreshToken } = c.req.valid("json");
      return c.json(await sessionService(c).logout(c.var.user, refreshToken), 200);
    })
    .openapi(logoutAll, async (c) => c.json(await sessionService(c).logoutAll(c.var.user), 200))
    .openapi(me, (c) => c.json(safeUser(c.var.user), 200))
    .openapi(forgotPassword, async (c) => {
      const { email } = c.req.valid("json");
      const service = sessionService(c);
      await enforceIpLimit(c, LIMITS.forgotPerIp);
      await enforceEmailLimit(c, LIMITS.forgotPerEmail, email);
      const mailSender = c.var.mailSender;
      const issue = service.createResetToken(email).then(async (issued) => {
        if (issued) await mailSender.sendPasswordReset(issued);
        return issued;
      });
      if (c.env.ENVIRONMENT === "development") {
        const issued = await issue;
        return c.json({ message: FORGOT_MESSAGE, resetToken: issued?.token ?? null }, 200);
      }
      // Known and unknown addresses must look alike, in body and in time: the work runs after the response.
      await inBackground(
        c,
        issue.catch((error: unknown) => {
          console.error(
            JSON.stringify({
              level: "error",
              msg: "password reset issue failed",
              error: String(error),
            }),
          );
        }),
      );
      return c.json({ message: FORGOT_MESSAGE }, 200);
    })
    .openapi(resetPassword, async (c) => {
      const { token, newPassword } = c.req.valid("json");
      const service = sessionService(c);
      await enforceIpLimit(c, LIMITS.resetPerIp);
      return c.json(await service.resetPassword(token, newPassword), 200);
    })
    .openapi(changePassword, async (c) => {
      const { currentPassword, newPassword } = c.req.valid("json");
      await enforceLimit(c, LIMITS.changePasswordPerUser, c.var.user.id);
      return c.json(
        await sessionService(c).changePassword(c.var.user, currentPassword, newPassword),
        200,
      );
    });
