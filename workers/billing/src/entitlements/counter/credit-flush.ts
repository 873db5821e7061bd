/*
 * What the credit balance moves to D1 (see the top of credit-balance.ts):
 * the draws waiting in `credit_draws`, and the cents written off in
 * `credit_write_offs` (cents that came back to a grant after it ended,
 * which must not become credit again). A claim moves both, in one
 * synchronous step, into a `credit_flushes` row with a fresh id; one D1
 * batch then applies it, every statement conditional on the id being
 * absent from D1's credit_flushes, which the batch records. A retry after
 * a lost answer changes nothing; a failure is retried with the same id.
 */

interface WriteOffRow extends Record<string, SqlStorageValue> {
  grant_id: string;
  amount: number;
  currency: string;
  status: string;
}

export class CreditFlush {
  constructor(
    private readonly sql: SqlStorage,
    private readonly d1: () => D1Database,
  ) {}

  /** Synchronous: `amount` cents of the grant are written off in D1 by the next flush. */
  writeOff(grantId: string, amount: number): void {
    if (amount <= 0) return;
    this.sql.exec(
      `INSERT INTO credit_write_offs (grant_id, amount) VALUES (?, ?)
       ON CONFLICT DO UPDATE SET amount = amount + excluded.amount`,
      grantId,
      amount,
    );
  }

  hasUnflushed(): boolean {
    return (
      this.sql.exec("SELECT 1 FROM credit_draws LIMIT 1").toArray().length > 0 ||
      this.sql.exec("SELECT 1 FROM credit_write_offs LIMIT 1").toArray().length > 0 ||
      this.sql.exec("SELECT 1 FROM credit_flushes LIMIT 1").toArray().length > 0
    );
  }

  /** Moves the draws and write-offs to D1; throws when D1 fails (the alarm retries). */
  async flush(tenantId: string): Promise<void> {
    this.claim();
    for (const pending of this.sql
      .exec<{ id: string; draws: string; write_offs: string | null }>(
        "SELECT id, draws, write_offs FROM credit_flushes",
      )
      .toArray()) {
      const d1 = this.d1();
      const at = new Date().toISOString();
      // Drawn goes down before written off goes up: D1 checks drawn + written_off <= amount.
      await d1.batch([
        ...drawStatements(d1, pending.id, tenantId, pending.draws, at),
        ...(pending.write_offs
          ? writeOffStatements(d1, pending.id, tenantId, pending.write_offs, at)
          : []),
        d1
          .prepare(
            "INSERT INTO credit_flushes (id, tenant_id, applied_at) VALUES (?1, ?2, ?3) ON CONFLICT DO NOTHING",
          )
          .bind(pending.id, tenantId, at),
      ]);
      this.sql.exec("DELETE FROM credit_flushes WHERE id = ?", pending.id);
    }
  }

  /** Synchronous: what waits into one flush row (only when none is pending: flushes apply in order). */
  private claim(): void {
    if (this.sql.exec("SELECT 1 FROM credit_flushes LIMIT 1").toArray().length > 0) return;
    const draws = this.sql.exec("SELECT * FROM credit_draws").toArray();
    const writeOffs = this.sql
      .exec<WriteOffRow>(
        `SELECT w.grant_id, w.amount, g.currency, g.status
           FROM credit_write_offs w JOIN credit_grants g ON g.id = w.grant_id`,
      )
      .toArray()
      .map((row) => ({
        grant_id: row.grant_id,
        amount: row.amount,
        currency: row.currency,
        // Fixed here, so that a retried flush names the same ledger entry.
        ledger_id: crypto.randomUUID(),
        description: `Credit grant ${row.grant_id} ${row.status.toLowerCase()}: returned credit written off`,
      }));
    if (draws.length === 0 && writeOffs.length === 0) return;
    this.sql.exec(
      "INSERT INTO credit_flushes (id, draws, write_offs) VALUES (?, ?, ?)",
      crypto.randomUUID(),
      JSON.stringify(draws),
      writeOffs.length > 0 ? JSON.stringify(writeOffs) : null,
    );
    this.sql.exec("DELETE FROM credit_draws");
    this.sql.exec("DELETE FROM credit_write_offs");
  }
}

const UNAPPLIED = "NOT EXISTS (SELECT 1 FROM credit_flushes WHERE id = ?1)";

/** The draws added to credit_draws and credit_grants.drawn. */
function drawStatements(
  d1: D1Database,
  flushId: string,
  tenantId: string,
  draws: string,
  at: string,
): D1PreparedStatement[] {
  return [
    d1
      .prepare(
        `INSERT INTO credit_draws (grant_id, tenant_id, subscription_id, feature_lookup_key, period_key, period_start, amount)
         SELECT json_extract(value, '$.grant_id'), ?2, json_extract(value, '$.subscription_id'),
                json_extract(value, '$.feature_key'), json_extract(value, '$.period_key'),
                json_extract(value, '$.period_start'), json_extract(value, '$.amount')
           FROM json_each(?3) WHERE ${UNAPPLIED}
         ON CONFLICT DO UPDATE SET amount = amount + excluded.amount`,
      )
      .bind(flushId, tenantId, draws),
    d1
      .prepare(
        `UPDATE credit_grants SET
           drawn = drawn + (SELECT sum(json_extract(value, '$.amount')) FROM json_each(?2)
                             WHERE json_extract(value, '$.grant_id') = credit_grants.id),
           updated_at = ?3
         WHERE id IN (SELECT json_extract(value, '$.grant_id') FROM json_each(?2))
           AND ${UNAPPLIED}`,
      )
      .bind(flushId, draws, at),
  ];
}

/** The write-offs added to credit_grants.written_off, each with its CREDIT_WRITE_OFF entry, as settling a grant does. */
function writeOffStatements(
  d1: D1Database,
  flushId: string,
  tenantId: string,
  writeOffs: string,
  at: string,
): D1PreparedStatement[] {
  return [
    d1
      .prepare(
        `UPDATE credit_grants SET
           written_off = written_off + (SELECT sum(json_extract(value, '$.amount')) FROM json_each(?2)
                                         WHERE json_extract(value, '$.grant_id') = credit_grants.id),
           updated_at = ?3
         WHERE id IN (SELECT json_extract(value, '$.grant_id') FROM json_each(?2))
           AND ${UNAPPLIED}`,
      )
      .bind(flushId, writeOffs, at),
    d1
      .prepare(
        `INSERT INTO ledger_entries (id, tenant_id, invoice_id, type, description, debit, credit, currency, external_reference, created_at)
         SELECT json_extract(value, '$.ledger_id'), ?2, NULL, 'CREDIT_WRITE_OFF',
                json_extract(value, '$.description'), json_extract(value, '$.amount'), 0,
                json_extract(value, '$.currency'), 'credit-grant:' || json_extract(value, '$.grant_id'), ?4
           FROM json_each(?3) WHERE ${UNAPPLIED}`,
      )
      .bind(flushId, tenantId, writeOffs, at),
  ];
}
