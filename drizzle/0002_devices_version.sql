-- A counter of the changes to the devices that the server holds in memory, kept by triggers so that a
-- change by any connection (the `devices revoke` command, an sqlite3 shell) counts; lastSeen writes do not.
CREATE TABLE `devices_version` (
	`version` integer NOT NULL
);
--> statement-breakpoint
INSERT INTO `devices_version` (`version`) VALUES (0);--> statement-breakpoint
CREATE TRIGGER `devices_version_insert` AFTER INSERT ON `devices`
BEGIN
	UPDATE `devices_version` SET `version` = `version` + 1;
END;--> statement-breakpoint
CREATE TRIGGER `devices_version_delete` AFTER DELETE ON `devices`
BEGIN
	UPDATE `devices_version` SET `version` = `version` + 1;
END;--> statement-breakpoint
CREATE TRIGGER `devices_version_update` AFTER UPDATE OF `id`, `installation_id`, `token_hash`, `revoked_at` ON `devices`
BEGIN
	UPDATE `devices_version` SET `version` = `version` + 1;
END;
