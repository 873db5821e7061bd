-- The raw usage-event log moves out of D1 into the tenants' UsageLog
-- Durable Objects (workers/billing/src/usage-log/). From this release on
-- nothing writes usage_events or usage_outbox; the Cron Trigger moves the
-- rows left in them into the objects, a chunk at a time, and deletes them
-- here (usage-log/d1-drain.ts). The indexes below served only the D1 log's
-- own reads (duplicate guard, outbox sweep, re-drive, archive, flush
-- claims); dropping them makes each deletion cheaper. The tables themselves
-- go in 0018_drop_d1_usage_log.sql, which refuses to run while rows remain.
DROP INDEX IF EXISTS `usage_events_tenant_event_unique`;--> statement-breakpoint
DROP INDEX IF EXISTS `usage_events_flush_idx`;--> statement-breakpoint
DROP INDEX IF EXISTS `usage_events_received_idx`;--> statement-breakpoint
DROP INDEX IF EXISTS `usage_events_unfinished_idx`;--> statement-breakpoint
DROP INDEX IF EXISTS `usage_outbox_due_idx`;--> statement-breakpoint
DROP INDEX IF EXISTS `usage_outbox_published_idx`;
