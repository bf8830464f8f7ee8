-- The unit of a row's sums, 2^-unit_bits. Rows written before it get 64: their sums are in units of
-- 2^-64, the unit they were written in, so they read back as before.
ALTER TABLE `consumption_days` ADD `unit_bits` integer DEFAULT 64 NOT NULL;--> statement-breakpoint
ALTER TABLE `consumption_lifetimes` ADD `unit_bits` integer DEFAULT 64 NOT NULL;