PRAGMA foreign_keys=OFF;--> statement-breakpoint
CREATE TABLE `__new_consumption_chunks` (
	`installation_id` text NOT NULL,
	`recorded_at` integer NOT NULL,
	`date` text NOT NULL,
	`km` real NOT NULL,
	`kwh` real NOT NULL,
	`hours` real NOT NULL,
	`soc_drop` real NOT NULL,
	`soh_percent` real,
	`snapshot` integer DEFAULT 0 NOT NULL,
	PRIMARY KEY(`recorded_at`, `installation_id`, `snapshot`, `date`)
);
--> statement-breakpoint
INSERT INTO `__new_consumption_chunks`("installation_id", "recorded_at", "date", "km", "kwh", "hours", "soc_drop", "soh_percent", "snapshot") SELECT "installation_id", "recorded_at", "date", "km", "kwh", "hours", "soc_drop", "soh_percent", "snapshot" FROM `consumption_chunks`;--> statement-breakpoint
DROP TABLE `consumption_chunks`;--> statement-breakpoint
ALTER TABLE `__new_consumption_chunks` RENAME TO `consumption_chunks`;--> statement-breakpoint
PRAGMA foreign_keys=ON;--> statement-breakpoint
CREATE INDEX `consumption_chunks_day` ON `consumption_chunks` (`installation_id`,`date`,`recorded_at`);--> statement-breakpoint
CREATE INDEX `consumption_chunks_soh` ON `consumption_chunks` (`installation_id`,`date`,`recorded_at`) WHERE "consumption_chunks"."soh_percent" IS NOT NULL;