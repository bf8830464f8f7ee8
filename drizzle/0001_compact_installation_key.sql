-- Samples keyed by a small number per installation instead of its 36-character id: every sample
-- kept, each installation numbered once, the planner states unchanged.
CREATE TABLE `installations` (
	`id` integer PRIMARY KEY NOT NULL,
	`uuid` text NOT NULL
);
--> statement-breakpoint
CREATE UNIQUE INDEX `installations_uuid_unique` ON `installations` (`uuid`);--> statement-breakpoint
INSERT INTO `installations` (`uuid`) SELECT DISTINCT `installation_id` FROM `samples` ORDER BY `installation_id`;--> statement-breakpoint
CREATE TABLE `__new_samples` (
	`installation` integer NOT NULL,
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
	PRIMARY KEY(`utc`, `installation`),
	FOREIGN KEY (`installation`) REFERENCES `installations`(`id`) ON UPDATE no action ON DELETE no action
);
--> statement-breakpoint
INSERT INTO `__new_samples` (`installation`, `utc`, `soc`, `soh`, `power`, `speed`, `lat`, `lon`, `elevation`, `heading`, `is_charging`, `is_dcfc`, `is_parked`, `capacity`, `soe`, `kwh_charged`, `ext_temp`, `batt_temp`, `cabin_temp`, `hvac_power`, `hvac_setpoint`, `voltage`, `current`, `odometer`, `est_battery_range`, `tire_pressure_fl`, `tire_pressure_fr`, `tire_pressure_rl`, `tire_pressure_rr`, `car_model`, `planner_state`)
  SELECT `installations`.`id`, `samples`.`utc`, `samples`.`soc`, `samples`.`soh`, `samples`.`power`, `samples`.`speed`, `samples`.`lat`, `samples`.`lon`, `samples`.`elevation`, `samples`.`heading`, `samples`.`is_charging`, `samples`.`is_dcfc`, `samples`.`is_parked`, `samples`.`capacity`, `samples`.`soe`, `samples`.`kwh_charged`, `samples`.`ext_temp`, `samples`.`batt_temp`, `samples`.`cabin_temp`, `samples`.`hvac_power`, `samples`.`hvac_setpoint`, `samples`.`voltage`, `samples`.`current`, `samples`.`odometer`, `samples`.`est_battery_range`, `samples`.`tire_pressure_fl`, `samples`.`tire_pressure_fr`, `samples`.`tire_pressure_rl`, `samples`.`tire_pressure_rr`, `samples`.`car_model`, `samples`.`planner_state`
  FROM `samples` JOIN `installations` ON `installations`.`uuid` = `samples`.`installation_id`;--> statement-breakpoint
DROP TABLE `samples`;--> statement-breakpoint
ALTER TABLE `__new_samples` RENAME TO `samples`;--> statement-breakpoint
CREATE INDEX `samples_planner_pending` ON `samples` (`installation`,`utc`) WHERE "samples"."planner_state" = 1;
