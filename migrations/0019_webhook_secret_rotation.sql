-- Secret rotation with an overlap: the secret a rotation replaced keeps
-- signing (a second signature in webhook-signature) until
-- previous_secret_expires_at, so receivers can move to the new secret
-- without dropping deliveries. Same encryption as secret_ciphertext.
ALTER TABLE `webhook_endpoints` ADD `previous_secret_ciphertext` text;--> statement-breakpoint
ALTER TABLE `webhook_endpoints` ADD `previous_secret_expires_at` text;
