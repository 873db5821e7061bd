import { z } from "zod";
import { takeBackReference } from "../../credits/index.ts";

/*
 * Taking back part of a grant (a refund of the TOP_UP invoice that bought
 * it), inside the tenant's EntitlementCounter. The counter is the only one
 * that knows a grant's exact unspent part, so the take-back is decided
 * here, all or nothing, in one synchronous step: the credits move to the
 * grant's `written_off` (so nothing can draw them) and a reservation row
 * names them. The caller then writes the write-off in D1 in its own batch
 * (credits/service.ts), whose ledger entry carries the reservation id.
 *
 * A reservation ends when D1 holds its ledger entry (the batch was
 * written: the row is dropped) or, while D1 does not, when the caller says
 * its batch did not write it or RESERVATION_STALE_MS passed (the caller is
 * gone): then the credits go back to the grant. Cents that go back to a
 * grant that ended meanwhile are written off instead (CreditFlush.writeOff),
 * as settling it would have done.
 */

/** After this long without its write-off in D1, a reservation's caller is gone: no batch can still write it. */
export const RESERVATION_STALE_MS = 15 * 60_000;

const ENDED_STATUSES = new Set(["VOIDED", "EXPIRED"]);

export const reserveTakeBackInput = z.strictObject({
  tenantId: z.uuid(),
  grantId: z.uuid(),
  credits: z.number().int().min(1).max(1_000_000_000),
});
export type ReserveTakeBackInput = z.input<typeof reserveTakeBackInput>;

export const releaseTakeBackInput = z.strictObject({
  tenantId: z.uuid(),
  reservationId: z.uuid(),
});
export type ReleaseTakeBackInput = z.input<typeof releaseTakeBackInput>;

/**
 * The counter's answer: the reservation and what the grant has left
 * unspent after it (0: the grant ended, VOIDED), or, refused, what the
 * grant has unspent (0 for a grant that is not ACTIVE).
 */
export type TakeBackAnswer =
  | { reserved: { reservationId: string; remaining: number } }
  | { refused: { unspent: number } };

/** Of these reservations, those whose write-off D1 holds (rows of `reference`). */
export function writtenTakeBacksStatement(
  d1: D1Database,
  tenantId: string,
  reservationIds: readonly string[],
): { statement: D1PreparedStatement; reservationOf: ReadonlyMap<string, string> } {
  const reservationOf = new Map(reservationIds.map((id) => [takeBackReference(id), id]));
  return {
    reservationOf,
    statement: d1
      .prepare(
        `SELECT external_reference AS reference FROM ledger_entries
          WHERE tenant_id = ?1 AND type = 'CREDIT_WRITE_OFF'
            AND external_reference IN (SELECT value FROM json_each(?2))`,
      )
      .bind(tenantId, JSON.stringify([...reservationOf.keys()])),
  };
}

/** The reservations named by the rows a writtenTakeBacksStatement answered. */
export function writtenReservations(
  rows: readonly Record<string, unknown>[],
  reservationOf: ReadonlyMap<string, string>,
): Set<string> {
  const written = new Set<string>();
  for (const row of rows) {
    const id = reservationOf.get(String(row.reference));
    if (id) written.add(id);
  }
  return written;
}

interface ReservationRow extends Record<string, SqlStorageValue> {
  id: string;
  grant_id: string;
  credits: number;
  ended: number;
  reserved_at: number;
}

interface GrantState extends Record<string, SqlStorageValue> {
  status: string;
  amount: number;
  drawn: number;
  written_off: number;
}

export class CreditTakeBacks {
  constructor(
    private readonly sql: SqlStorage,
    /** Queues cents of an ended grant for a write-off in D1. */
    private readonly writeOff: (grantId: string, amount: number) => void,
    /** The grants changed: cached reads are stale. */
    private readonly changed: () => void,
  ) {}

  /** Synchronous. Null when the object does not know the grant. */
  reserve(grantId: string, credits: number, nowMs: number): TakeBackAnswer | null {
    const grant = this.grant(grantId);
    if (!grant) return null;
    const unspent =
      grant.status === "ACTIVE" ? Math.max(0, grant.amount - grant.drawn - grant.written_off) : 0;
    if (credits > unspent) return { refused: { unspent } };
    const remaining = unspent - credits;
    const reservationId = crypto.randomUUID();
    // Taking the last credit ends the grant here at once, so that no cent
    // returned to it meanwhile becomes spendable again.
    this.sql.exec(
      `UPDATE credit_grants SET written_off = written_off + ?2,
         status = CASE WHEN ?3 = 0 THEN 'VOIDED' ELSE status END
       WHERE id = ?1`,
      grantId,
      credits,
      remaining,
    );
    this.sql.exec(
      "INSERT INTO credit_take_backs (id, grant_id, credits, ended, reserved_at) VALUES (?, ?, ?, ?, ?)",
      reservationId,
      grantId,
      credits,
      remaining === 0 ? 1 : 0,
      nowMs,
    );
    this.changed();
    return { reserved: { reservationId, remaining } };
  }

  has(reservationId: string): boolean {
    return this.row(reservationId) !== undefined;
  }

  /** The reservations not settled yet (a load asks D1 which of them were written). */
  open(): { id: string; reservedAt: number }[] {
    return this.sql
      .exec<ReservationRow>("SELECT id, reserved_at FROM credit_take_backs")
      .toArray()
      .map((row) => ({ id: row.id, reservedAt: row.reserved_at }));
  }

  /**
   * Synchronous, after a D1 read that started at `readAtMs`: the
   * reservations D1 holds are done; those it does not hold that were
   * already stale when it read go back. Answers how many went back.
   */
  reconcile(
    checked: readonly { id: string; reservedAt: number }[],
    written: ReadonlySet<string>,
    readAtMs: number,
  ): number {
    let undone = 0;
    for (const reservation of checked) {
      if (written.has(reservation.id)) this.written(reservation.id);
      else if (reservation.reservedAt < readAtMs - RESERVATION_STALE_MS) {
        undone += this.undo(reservation.id) ? 1 : 0;
      }
    }
    return undone;
  }

  /** Synchronous: D1 holds the reservation's write-off; the credits stay written off. */
  written(reservationId: string): void {
    this.sql.exec("DELETE FROM credit_take_backs WHERE id = ?", reservationId);
  }

  /**
   * Synchronous: the reservation was not written in D1; its credits go
   * back to the grant (written off when the grant ended since). Answers
   * whether there was such a reservation.
   */
  undo(reservationId: string): boolean {
    const reservation = this.row(reservationId);
    if (!reservation) return false;
    const grant = this.grant(reservation.grant_id);
    if (reservation.ended === 1) {
      this.sql.exec(
        "UPDATE credit_grants SET written_off = written_off - ?2, status = 'ACTIVE' WHERE id = ?1",
        reservation.grant_id,
        reservation.credits,
      );
    } else if (grant && ENDED_STATUSES.has(grant.status)) {
      // Settling the grant left these out of what it wrote off: they are written off now.
      this.writeOff(reservation.grant_id, reservation.credits);
    } else {
      this.sql.exec(
        "UPDATE credit_grants SET written_off = written_off - ?2 WHERE id = ?1",
        reservation.grant_id,
        reservation.credits,
      );
    }
    this.sql.exec("DELETE FROM credit_take_backs WHERE id = ?", reservationId);
    this.changed();
    return true;
  }

  /** Synchronous: the grant was settled (void, expiry); its end is no longer a reservation's to undo. */
  grantSettled(grantId: string): void {
    this.sql.exec("UPDATE credit_take_backs SET ended = 0 WHERE grant_id = ?", grantId);
  }

  private row(reservationId: string): ReservationRow | undefined {
    return this.sql
      .exec<ReservationRow>("SELECT * FROM credit_take_backs WHERE id = ?", reservationId)
      .toArray()[0];
  }

  private grant(grantId: string): GrantState | undefined {
    return this.sql
      .exec<GrantState>(
        "SELECT status, amount, drawn, written_off FROM credit_grants WHERE id = ?",
        grantId,
      )
      .toArray()[0];
  }
}
