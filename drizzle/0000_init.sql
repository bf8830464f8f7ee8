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
	PRIMARY KEY(`installation_id`, `utc`)
);
--> statement-breakpoint
CREATE INDEX `samples_planner_pending` ON `samples` (`installation_id`,`utc`) WHERE "samples"."planner_state" = 1;