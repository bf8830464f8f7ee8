-- The unit of a row's sums, 2^-unit_bits. Rows written before it stay NULL: their sums are in units of
-- 2^-64, read as such, and an installation's are rebuilt from its chunks at its next chunk write.
ALTER TABLE `consumption_days` ADD `unit_bits` integer;--> statement-breakpoint
ALTER TABLE `consumption_lifetimes` ADD `unit_bits` integer;