import {
  changedRows,
  type Database,
  nowIso,
  uniqueViolation,
} from "@edge-platform/shared/db/client";
import { ApiError } from "@edge-platform/shared/http/api-error";
import { type AuditContext, auditEntry, ROW_CHANGED, SYSTEM_AUDIT } from "../audit/index.ts";
import {
  findUserById,
  hashPassword,
  randomToken,
  sha256Hex,
  signAccessToken,
  slugFromName,
  type UserRow,
  verifyPassword,
  withRandomSuffix,
} from "../platform/index.ts";
import { successorToken, withinReuseGrace } from "./domain/refresh-tokens.ts";
import {
  consumeResetToken,
  findRefreshToken,
  findResetToken,
  insertRefreshToken,
  insertResetToken,
  type RefreshTokenRow,
  retireUnusedResetTokens,
  revokeAllRefreshTokens,
  revokeRefreshTokenFamily,
  revokeRefreshTokenOfUser,
  rotateRefreshToken,
} from "./session-storage.ts";
import { insertMembership, insertTenant } from "./tenant-storage.ts";
import {
  bumpTokenVersion,
  findUserByEmail,
  insertUser,
  setPasswordAndEndSessions,
  updateUser,
} from "./user-storage.ts";
import { sessionUser } from "./views.ts";

export const REFRESH_TOKEN_TTL_MS = 7 * 24 * 60 * 60 * 1000;
export const RESET_TOKEN_TTL_MS = 15 * 60 * 1000;
export const INVALID_CREDENTIALS = "Invalid email or password";
/**
 * Verified against when the email is unknown, so that answer costs one
 * PBKDF2 run like a wrong password does. Made with PASSWORD_ITERATIONS
 * (a unit test keeps the two in step) from a password nobody knows.
 */
export const DUMMY_PASSWORD_HASH =
  "pbkdf2-sha256$100000$zk5V00vRpCCjJK4cuyUolA==$tTr1WP4M//2NYQlb6yrOyqPGe7gJgl3PW4b4hYzB1N8=";

export interface TokenPair {
  accessToken: string;
  refreshToken: string;
}

/**
 * A refresh token: the raw value for the client, the row (hash only) for the
 * store. Random for a sign-in, which starts a family; derived for a rotation
 * (see successorToken), which continues the presented token's family.
 */
async function newRefreshToken(userId: string, now: Date, raw = randomToken(32)) {
  const id = crypto.randomUUID();
  return {
    raw,
    row: {
      id,
      userId,
      familyId: id,
      tokenHash: await sha256Hex(raw),
      expiresAt: new Date(now.getTime() + REFRESH_TOKEN_TTL_MS).toISOString(),
    },
  };
}

function accessTokenFor(key: Uint8Array<ArrayBuffer>, user: UserRow, version = user.tokenVersion) {
  return signAccessToken(key, { sub: user.id, email: user.email, ver: version });
}

export interface RegisterInput {
  email: string;
  password: string;
  firstName: string;
  lastName: string;
  tenantName: string;
  tenantSlug?: string | undefined;
  tenantMetadata?: Record<string, unknown> | undefined;
}

export class SessionService {
  constructor(
    private readonly db: Database,
    private readonly key: Uint8Array<ArrayBuffer>,
    private readonly audit: AuditContext = SYSTEM_AUDIT,
  ) {}

  /** User, tenant, OWNER membership and first refresh token: one batch, all or nothing. */
  async register(input: RegisterInput) {
    const now = new Date();
    const passwordHash = await hashPassword(input.password);
    const user: UserRow = {
      id: crypto.randomUUID(),
      email: input.email,
      passwordHash,
      firstName: input.firstName,
      lastName: input.lastName,
      isActive: true,
      isPlatformAdmin: false,
      tokenVersion: 0,
      createdAt: nowIso(now),
      updatedAt: nowIso(now),
    };
    const chosenSlug = input.tenantSlug;
    let slug = chosenSlug ?? slugFromName(input.tenantName);
    // A derived slug that is taken gets one retry with a random suffix; a chosen one is the caller's to change.
    for (let attempt = 0; ; attempt++) {
      const tenant = {
        id: crypto.randomUUID(),
        name: input.tenantName,
        slug,
        metadata: input.tenantMetadata ?? {},
        status: "ACTIVE" as const,
        createdAt: nowIso(now),
        updatedAt: nowIso(now),
      };
      const refresh = await newRefreshToken(user.id, now);
      try {
        await this.db.batch([
          insertUser(this.db, user),
          insertTenant(this.db, tenant),
          insertMembership(this.db, {
            id: crypto.randomUUID(),
            userId: user.id,
            tenantId: tenant.id,
            role: "OWNER",
          }),
          insertRefreshToken(this.db, refresh.row),
        ]);
      } catch (error) {
        const violated = uniqueViolation(error);
        if (violated === "users.email") {
          throw new ApiError(409, `User with email "${input.email}" already exists`, {
            code: "email_taken",
          });
        }
        if (violated === "tenants.slug") {
          if (chosenSlug === undefined && attempt === 0) {
            slug = withRandomSuffix(slug);
            continue;
          }
          throw new ApiError(409, `Tenant with slug "${slug}" already exists`, {
            code: "slug_taken",
          });
        }
        throw error;
      }
      return {
        accessToken: await accessTokenFor(this.key, user),
        refreshToken: refresh.raw,
        user: sessionUser(user),
        tenant: { id: tenant.id, name: tenant.name, slug: tenant.slug },
      };
    }
  }

  /**
   * Unknown email and wrong password give the same error after the same
   * work (one PBKDF2 verification). A disabled account is only reported to
   * someone who knows its password.
   */
  async login(email: string, password: string) {
    const user = await findUserByEmail(this.db, email);
    const verification = await verifyPassword(password, user?.passwordHash ?? DUMMY_PASSWORD_HASH);
    if (!user || !verification.valid) throw new ApiError(401, INVALID_CREDENTIALS);
    if (!user.isActive) throw new ApiError(401, "Account is disabled");
    if (verification.needsRehash) {
      await updateUser(this.db, user.id, { passwordHash: await hashPassword(password) });
    }
    const now = new Date();
    const refresh = await newRefreshToken(user.id, now);
    await insertRefreshToken(this.db, refresh.row);
    return {
      accessToken: await accessTokenFor(this.key, user),
      refreshToken: refresh.raw,
      user: sessionUser(user),
    };
  }

  /**
   * Rotation with reuse detection and a grace period. A live token is
   * exchanged for a new pair and revoked. A token presented again within
   * REFRESH_REUSE_GRACE_MS (30 s) of its rotation answers as its first use
   * did (a fresh access token and the same successor, while that successor
   * is live), so concurrent refreshes by one client all carry on. Any other
   * reuse is evidence of theft and ends the token's session, its family,
   * leaving the user's other sessions and API keys alone.
   */
  async refresh(presented: string): Promise<TokenPair> {
    const hash = await sha256Hex(presented);
    const row = await findRefreshToken(this.db, hash);
    if (!row) throw new ApiError(401, "Refresh token not found or has been purged");
    const now = new Date();
    let spent: RefreshTokenRow = row;
    if (row.revokedAt === null) {
      if (Date.parse(row.expiresAt) <= now.getTime()) {
        throw new ApiError(401, "Refresh token has expired");
      }
      const user = await this.activeUser(row.userId);
      const successor = await newRefreshToken(
        user.id,
        now,
        await successorToken(this.key, presented),
      );
      const [, revoked] = await this.db.batch(
        rotateRefreshToken(this.db, hash, successor.row, nowIso(now)),
      );
      if (changedRows(revoked) === 1) {
        return { accessToken: await accessTokenFor(this.key, user), refreshToken: successor.raw };
      }
      // Another request rotated this token first (answered as a reuse), or
      // it expired, or was purged, since it was read.
      const current = await findRefreshToken(this.db, hash);
      if (!current) throw new ApiError(401, "Refresh token not found or has been purged");
      if (current.revokedAt === null) throw new ApiError(401, "Refresh token has expired");
      spent = current;
    }
    const again = await this.withinGrace(spent, presented, now);
    if (again) return again;
    await this.endSession(spent);
    throw new ApiError(401, "Refresh token has been revoked");
  }

  /** The answer to a reuse within the grace period, or undefined when it is not one. */
  private async withinGrace(spent: RefreshTokenRow, presented: string, now: Date) {
    if (spent.revokedAt === null || !withinReuseGrace(spent.revokedAt, now)) return undefined;
    const successor = await successorToken(this.key, presented);
    const next = await findRefreshToken(this.db, await sha256Hex(successor));
    // A token ended by logout has no successor; one whose successor was
    // rotated or revoked since is not honoured either.
    if (!next || next.userId !== spent.userId || next.revokedAt !== null) return undefined;
    if (Date.parse(next.expiresAt) <= now.getTime()) return undefined;
    const user = await this.activeUser(spent.userId);
    return { accessToken: await accessTokenFor(this.key, user), refreshToken: successor };
  }

  private async activeUser(userId: string) {
    const user = await findUserById(this.db, userId);
    if (!user?.isActive) throw new ApiError(401, "Account is disabled");
    return user;
  }

  /**
   * A reused refresh token ends its own session on no one's request (the
   * system acts): the family's refresh tokens are revoked. Access tokens the
   * family was issued are not tracked per session; they expire within their
   * 15 minutes.
   */
  private async endSession(token: RefreshTokenRow) {
    const familyId = token.familyId ?? token.id;
    await this.db.batch([
      revokeRefreshTokenFamily(this.db, familyId),
      auditEntry(
        this.db,
        { ...this.audit, actor: SYSTEM_AUDIT.actor },
        {
          tenantId: null,
          action: "auth.sessions_revoked",
          targetType: "user",
          targetId: token.userId,
          changes: {
            sessions: { after: "revoked" },
            session: { after: familyId },
            reason: { after: "refresh_token_reused" },
          },
        },
      ),
    ]);
  }

  /** Revokes the caller's own refresh token; someone else's token is left alone. Idempotent. */
  async logout(user: UserRow, presented: string) {
    await revokeRefreshTokenOfUser(this.db, await sha256Hex(presented), user.id);
    return { message: "Logged out successfully" };
  }

  async logoutAll(user: UserRow) {
    await this.db.batch([
      revokeAllRefreshTokens(this.db, user.id),
      bumpTokenVersion(this.db, user.id),
      auditEntry(this.db, this.audit, {
        tenantId: null,
        action: "auth.sessions_revoked",
        targetType: "user",
        targetId: user.id,
        changes: { sessions: { after: "revoked" }, reason: { after: "logout_all" } },
      }),
    ]);
    return { message: "All sessions have been logged out" };
  }

  /**
   * Creates a reset token for an existing account (earlier unused ones are
   * retired) and returns it with the address, for delivery; undefined for
   * unknown or disabled accounts. The caller answers identically either way.
   */
  async createResetToken(email: string) {
    const user = await findUserByEmail(this.db, email);
    if (!user?.isActive) return undefined;
    const token = randomToken(32);
    const expiresAt = new Date(Date.now() + RESET_TOKEN_TTL_MS).toISOString();
    await this.db.batch([
      retireUnusedResetTokens(this.db, user.id),
      insertResetToken(this.db, {
        id: crypto.randomUUID(),
        userId: user.id,
        tokenHash: await sha256Hex(token),
        expiresAt,
      }),
    ]);
    return { to: user.email, token, expiresAt };
  }

  async resetPassword(token: string, newPassword: string) {
    const row = await findResetToken(this.db, await sha256Hex(token));
    if (!row) throw new ApiError(400, "Invalid reset token");
    if (row.usedAt !== null) throw new ApiError(400, "Reset token has already been used");
    const now = new Date();
    if (Date.parse(row.expiresAt) <= now.getTime()) {
      throw new ApiError(400, "Reset token has expired");
    }
    const newHash = await hashPassword(newPassword);
    const results = await this.db.batch([
      ...consumeResetToken(this.db, row, newHash, nowIso(now)),
      // Only if the token was still usable (the statement just before marked it used).
      auditEntry(
        this.db,
        { ...this.audit, actor: { type: "user", id: row.userId } },
        {
          tenantId: null,
          action: "auth.password_reset",
          targetType: "user",
          targetId: row.userId,
          changes: { password: { after: "reset" }, sessions: { after: "revoked" } },
        },
        ROW_CHANGED,
      ),
    ]);
    if (changedRows(results[2]) !== 1) {
      throw new ApiError(400, "Reset token has already been used");
    }
    return { message: "Password has been reset. Please log in with your new password." };
  }

  /** New hash, every session ended, and a new pair for this client: one batch. */
  async changePassword(user: UserRow, currentPassword: string, newPassword: string) {
    const verification = await verifyPassword(currentPassword, user.passwordHash);
    if (!verification.valid) throw new ApiError(401, "Invalid current password");
    const newHash = await hashPassword(newPassword);
    const refresh = await newRefreshToken(user.id, new Date());
    const [, [updated]] = await this.db.batch([
      revokeAllRefreshTokens(this.db, user.id),
      setPasswordAndEndSessions(this.db, user.id, newHash),
      insertRefreshToken(this.db, refresh.row),
      auditEntry(this.db, this.audit, {
        tenantId: null,
        action: "auth.password_changed",
        targetType: "user",
        targetId: user.id,
        changes: { password: { after: "changed" }, sessions: { after: "revoked" } },
      }),
    ]);
    if (!updated) throw new ApiError(401, "User not found");
    return {
      message: "Password changed successfully. All other sessions have been logged out.",
      accessToken: await accessTokenFor(this.key, user, updated.tokenVersion),
      refreshToken: refresh.raw,
    };
  }
}
