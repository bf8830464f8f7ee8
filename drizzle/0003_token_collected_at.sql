-- When a paired car collected its token (null while it has not): a device still uncollected when the
-- server starts lost its pairing request with the last run and is revoked. Devices paired before this
-- column count as collected.
ALTER TABLE `devices` ADD `token_collected_at` integer;--> statement-breakpoint
UPDATE `devices` SET `token_collected_at` = `created_at`;
