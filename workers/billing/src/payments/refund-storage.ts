import type { RefundStatus } from "@edge-platform/shared/db/schema/billing";
import { tenantEventFromRowStatement } from "../notifications/index.ts";

// Refunds in the ledger. A REFUND entry is money that went back to the
// tenant; its reference says what it refunded: `credit-note:<id>` a REFUND
// credit note; `credit-refund:<payment>:<cumulative>` money a payment put
// on the credit balance (no invoice needed it, or it was more than was
// due) and `credit-refund-owed:<payment>:<cumulative>` the part of it the
// balance no longer held; `credit-refund:note:<invoice>:<cumulative>` a
// refund of the paying payment that took back what the invoice's credit
// notes put on the balance, and `credit-refund-owed:note:...` the part of
// that credit already spent; anything else a refund the provider reported
// on the payment that paid the invoice, owed again.

export interface RefundState {
  /** What the payment paid of the invoice (its PAYMENT), null when it did not pay it. */
  paid: number | null;
  /** What the payment put on the credit balance (a CREDIT with its reference), null when none. */
  credited: number | null;
  /** REFUND entries of the invoice, except refunds out of the credit balance. */
  refunded: number;
  /** Refunds out of the credit balance this payment created. */
  creditRefunded: number;
  /** What the invoice's credit notes put on the credit balance (CREDIT notes, failed refunds). */
  notesCredited: number;
  /** Refunds of the paying payment that took that back. */
  noteCreditRefunded: number;
  /** REFUND credit notes of the invoice waiting for the provider, oldest first. */
  pendingNotes: { id: string; total: number }[];
}

export async function refundStateOf(
  d1: D1Database,
  invoiceId: string,
  providerPaymentId: string,
): Promise<RefundState> {
  const [state, notes] = await d1.batch([
    d1
      .prepare(
        `SELECT
           (SELECT credit FROM ledger_entries WHERE invoice_id = ?1 AND type = 'PAYMENT' AND external_reference = ?2) AS paid,
           (SELECT credit FROM ledger_entries WHERE type = 'CREDIT' AND external_reference = ?2) AS credited,
           (SELECT coalesce(sum(debit), 0) FROM ledger_entries
             WHERE invoice_id = ?1 AND type = 'REFUND' AND coalesce(external_reference, '') NOT LIKE 'credit-refund%') AS refunded,
           (SELECT coalesce(sum(debit), 0) FROM ledger_entries
             WHERE type = 'REFUND' AND (instr(external_reference, 'credit-refund:' || ?2 || ':') = 1
                                        OR instr(external_reference, 'credit-refund-owed:' || ?2 || ':') = 1)) AS credit_refunded,
           (SELECT coalesce(sum(total), 0) FROM credit_notes
             WHERE invoice_id = ?1 AND (settlement = 'CREDIT' OR (settlement = 'REFUND' AND refund_status = 'FAILED'))) AS notes_credited,
           (SELECT coalesce(sum(debit), 0) FROM ledger_entries
             WHERE invoice_id = ?1 AND type = 'REFUND'
               AND (instr(external_reference, 'credit-refund:note:' || ?1 || ':') = 1
                    OR instr(external_reference, 'credit-refund-owed:note:' || ?1 || ':') = 1)) AS note_credit_refunded`,
      )
      .bind(invoiceId, providerPaymentId),
    d1
      .prepare(
        `SELECT id, total FROM credit_notes
         WHERE invoice_id = ?1 AND settlement = 'REFUND' AND refund_status = 'PENDING'
         ORDER BY created_at, rowid`,
      )
      .bind(invoiceId),
  ]);
  const row = state?.results[0] as
    | {
        paid: number | null;
        credited: number | null;
        refunded: number;
        credit_refunded: number;
        notes_credited: number;
        note_credit_refunded: number;
      }
    | undefined;
  return {
    paid: row?.paid ?? null,
    credited: row?.credited ?? null,
    refunded: Number(row?.refunded ?? 0),
    creditRefunded: Number(row?.credit_refunded ?? 0),
    notesCredited: Number(row?.notes_credited ?? 0),
    noteCreditRefunded: Number(row?.note_credit_refunded ?? 0),
    pendingNotes: ((notes?.results ?? []) as { id: string; total: number }[]).map((note) => ({
      id: note.id,
      total: Number(note.total),
    })),
  };
}

/**
 * The refund's outcome on a REFUND credit note still PENDING: a SUCCEEDED
 * refund's REFUND entry, and a settled one's `refund.succeeded` or
 * `refund.failed` event (one id per note, whichever path records it first).
 */
export function refundOutcomeStatements(
  d1: D1Database,
  creditNoteId: string,
  outcome: { status: RefundStatus; reference: string | null; failureReason: string | null },
  now: Date,
): D1PreparedStatement[] {
  const at = now.toISOString();
  const settled =
    outcome.status === "PENDING"
      ? null
      : outcome.status === "SUCCEEDED"
        ? "refund.succeeded"
        : "refund.failed";
  return [
    d1
      .prepare(
        `UPDATE credit_notes SET refund_status = ?, refund_reference = coalesce(?, refund_reference),
           refund_failure_reason = ?, updated_at = ?
         WHERE id = ? AND refund_status = 'PENDING'`,
      )
      .bind(outcome.status, outcome.reference, outcome.failureReason, at, creditNoteId),
    d1
      .prepare(
        `INSERT INTO ledger_entries (id, tenant_id, invoice_id, type, description, debit, credit, currency, external_reference, created_at)
         SELECT ?, cn.tenant_id, cn.invoice_id, 'REFUND',
                'Refund of credit note ' || cn.credit_note_number, cn.total, 0, cn.currency, 'credit-note:' || cn.id, ?
         FROM credit_notes cn WHERE cn.id = ? AND cn.refund_status = 'SUCCEEDED'
         ON CONFLICT DO NOTHING`,
      )
      .bind(crypto.randomUUID(), at, creditNoteId),
    ...(settled
      ? [
          tenantEventFromRowStatement(
            d1,
            settled,
            creditNoteEventRow(creditNoteId, {
              sql: "refund_status = ? AND updated_at = ?",
              params: [outcome.status, at],
            }),
            { now, id: `evt_${settled.replace(".", "_")}_${creditNoteId}` },
          ),
        ]
      : []),
  ];
}

/**
 * A REFUND entry with its reference (once per reference): `credit-refund:`
 * refunds out of the credit balance, `credit-refund-owed:` the part of such
 * a refund the balance no longer held (the tenant owes it again).
 */
export function refundEntryStatement(
  d1: D1Database,
  refund: {
    tenantId: string;
    invoiceId: string;
    amount: number;
    currency: string;
    reference: string;
    description: string;
    now: string;
  },
) {
  return d1
    .prepare(
      `INSERT INTO ledger_entries (id, tenant_id, invoice_id, type, description, debit, credit, currency, external_reference, created_at)
       SELECT ?1, ?2, ?3, 'REFUND', ?4, ?5, 0, ?6, ?7, ?8
       WHERE ?5 > 0
       ON CONFLICT DO NOTHING`,
    )
    .bind(
      crypto.randomUUID(),
      refund.tenantId,
      refund.invoiceId,
      refund.description,
      refund.amount,
      refund.currency,
      refund.reference,
      refund.now,
    );
}

/** A credit note as webhooks carry it: `tenant_id` and `data` for tenantEventFromRowStatement. */
export function creditNoteEventRow(
  creditNoteId: string,
  extra?: { sql: string; params: unknown[] },
) {
  return {
    sql: `SELECT tenant_id, json_object(
            'id', id, 'number', credit_note_number, 'invoiceId', invoice_id, 'reason', reason,
            'settlement', settlement, 'currency', currency, 'subtotal', subtotal, 'tax', tax,
            'total', total, 'refundStatus', refund_status, 'createdAt', created_at) AS data
          FROM credit_notes WHERE id = ? ${extra ? `AND ${extra.sql}` : ""}`,
    params: [creditNoteId, ...(extra?.params ?? [])],
  };
}
