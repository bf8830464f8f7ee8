-- The unit of a row's sums, 2^-unit_bits. Rows written before it stay NULL (their sums in units of
-- 2^-64) until the server's start rebuilds them from the chunks, before it serves.
ALTER TABLE `consumption_days` ADD `unit_bits` integer;--> statement-breakpoint
ALTER TABLE `consumption_lifetimes` ADD `unit_bits` integer;