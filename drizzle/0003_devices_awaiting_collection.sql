-- Set from a device's approval until its car collects the token: a device still awaiting collection
-- when the server starts lost its pairing request with the last run and is revoked. Rows written
-- without it (devices paired before, or by an earlier version beside this one) count as collected.
ALTER TABLE `devices` ADD `awaiting_collection` integer DEFAULT false NOT NULL;
