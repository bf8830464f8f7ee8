CREATE TABLE `charging_sessions` (
	`installation_id` text NOT NULL,
	`session_id` text NOT NULL,
	`started_at` integer NOT NULL,
	`ended_at` integer NOT NULL,
	`energy_kwh` real NOT NULL,
	`duration_seconds` real,
	`metered_seconds` real,
	`charging_loss_percent` real,
	`grid_energy_kwh` real,
	`price_per_kwh` real,
	`total_cost` real,
	`start_soc_percent` real,
	`end_soc_percent` real,
	`last_power` real,
	`curve_interval_ms` real,
	`is_demo` integer,
	`curve` text,
	PRIMARY KEY(`installation_id`, `session_id`)
);
--> statement-breakpoint
CREATE TABLE `consumption_chunks` (
	`installation_id` text NOT NULL,
	`recorded_at` integer NOT NULL,
	`date` text NOT NULL,
	`km` real NOT NULL,
	`kwh` real NOT NULL,
	`hours` real NOT NULL,
	`soc_drop` real NOT NULL,
	`soh_percent` real,
	PRIMARY KEY(`recorded_at`, `installation_id`)
);
--> statement-breakpoint
CREATE INDEX `consumption_chunks_soh` ON `consumption_chunks` (`installation_id`,`date`,`recorded_at`) WHERE "consumption_chunks"."soh_percent" IS NOT NULL;--> statement-breakpoint
CREATE TABLE `consumption_days` (
	`installation_id` text NOT NULL,
	`date` text NOT NULL,
	`chunks` integer NOT NULL,
	`km` text NOT NULL,
	`kwh` text NOT NULL,
	`hours` text NOT NULL,
	`soc_drop` text NOT NULL,
	`soh_percent` real,
	PRIMARY KEY(`installation_id`, `date`)
);
--> statement-breakpoint
CREATE TABLE `consumption_lifetimes` (
	`installation_id` text PRIMARY KEY NOT NULL,
	`km` text NOT NULL,
	`kwh` text NOT NULL,
	`hours` text NOT NULL,
	`soc_drop` text NOT NULL
);
--> statement-breakpoint
CREATE TABLE `devices` (
	`id` text PRIMARY KEY NOT NULL,
	`installation_id` text NOT NULL,
	`name` text,
	`token_hash` text NOT NULL,
	`created_at` integer NOT NULL,
	`last_seen_at` integer,
	`revoked_at` integer
);
--> statement-breakpoint
CREATE UNIQUE INDEX `devices_token_hash_unique` ON `devices` (`token_hash`);--> statement-breakpoint
CREATE INDEX `devices_installation` ON `devices` (`installation_id`);--> statement-breakpoint
CREATE TABLE `samples` (
	`installation_id` text NOT NULL,
	`utc` integer NOT NULL,
	`soc` real,
	`soh` real,
	`power` real,
	`speed` real,
	`lat` real,
	`lon` real,
	`elevation` real,
	`heading` real,
	`is_charging` integer,
	`is_dcfc` integer,
	`is_parked` integer,
	`capacity` real,
	`soe` real,
	`kwh_charged` real,
	`ext_temp` real,
	`batt_temp` real,
	`cabin_temp` real,
	`hvac_power` real,
	`hvac_setpoint` real,
	`voltage` real,
	`current` real,
	`odometer` real,
	`est_battery_range` real,
	`tire_pressure_fl` real,
	`tire_pressure_fr` real,
	`tire_pressure_rl` real,
	`tire_pressure_rr` real,
	`car_model` text,
	`planner_state` integer DEFAULT 0 NOT NULL,
	PRIMARY KEY(`utc`, `installation_id`)
);
--> statement-breakpoint
CREATE INDEX `samples_planner_pending` ON `samples` (`installation_id`,`utc`) WHERE "samples"."planner_state" = 1;