CREATE TABLE `usage_hourly` (
	`tenant_id` text NOT NULL,
	`subscription_id` text NOT NULL,
	`feature_lookup_key` text NOT NULL,
	`hour_start` text NOT NULL,
	`amount` integer DEFAULT 0 NOT NULL,
	PRIMARY KEY(`subscription_id`, `feature_lookup_key`, `hour_start`),
	FOREIGN KEY (`tenant_id`) REFERENCES `tenants`(`id`) ON UPDATE no action ON DELETE cascade,
	FOREIGN KEY (`subscription_id`) REFERENCES `subscriptions`(`id`) ON UPDATE no action ON DELETE cascade,
	CONSTRAINT "usage_hourly_amount_non_negative" CHECK(amount >= 0)
);
--> statement-breakpoint
CREATE INDEX `usage_hourly_tenant_feature_hour_idx` ON `usage_hourly` (`tenant_id`,`feature_lookup_key`,`hour_start`);--> statement-breakpoint
-- Usage counted before this table existed: aggregated events by the hour of
-- their timestamp, and the rest of each window (consumes, archived events)
-- in the hour of the window's latest use, so the hours add up to the windows.
WITH event_hours AS (
  SELECT tenant_id, subscription_id, feature_lookup_key, period_key,
         strftime('%Y-%m-%dT%H:00:00.000Z', timestamp) AS hour_start, sum(amount) AS amount
    FROM usage_events
   WHERE status = 'AGGREGATED' AND subscription_id IS NOT NULL
   GROUP BY 1, 2, 3, 4, 5
),
event_windows AS (
  SELECT subscription_id, feature_lookup_key, period_key, sum(amount) AS amount
    FROM event_hours GROUP BY 1, 2, 3
),
rest AS (
  SELECT a.tenant_id, a.subscription_id, a.feature_lookup_key,
         strftime('%Y-%m-%dT%H:00:00.000Z', coalesce(a.last_event_at, a.period_start)) AS hour_start,
         a.amount - coalesce(w.amount, 0) AS amount
    FROM usage_aggregates a
    LEFT JOIN event_windows w
      ON w.subscription_id = a.subscription_id AND w.feature_lookup_key = a.feature_lookup_key
     AND w.period_key = a.period_key
)
INSERT INTO `usage_hourly` (`tenant_id`, `subscription_id`, `feature_lookup_key`, `hour_start`, `amount`)
SELECT tenant_id, subscription_id, feature_lookup_key, hour_start, sum(amount)
  FROM (
    SELECT tenant_id, subscription_id, feature_lookup_key, hour_start, amount FROM event_hours
     WHERE subscription_id IN (SELECT id FROM subscriptions)
    UNION ALL
    SELECT tenant_id, subscription_id, feature_lookup_key, hour_start, amount FROM rest WHERE amount > 0
  )
 WHERE true
 GROUP BY 1, 2, 3, 4;
