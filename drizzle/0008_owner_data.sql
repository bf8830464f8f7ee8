CREATE TABLE `planner_status` (
	`installation_id` text PRIMARY KEY NOT NULL,
	`sent` integer DEFAULT 0 NOT NULL,
	`given_up` integer DEFAULT 0 NOT NULL,
	`last_sent_at` integer,
	`last_sent_utc` integer,
	`last_failure_at` integer,
	`last_failure_status` integer,
	`last_failure_error` text,
	`last_failure_attempt` integer
);
--> statement-breakpoint
CREATE TABLE `purges` (
	`id` integer PRIMARY KEY NOT NULL,
	`installation_id` text NOT NULL,
	`at` integer NOT NULL
);
--> statement-breakpoint
ALTER TABLE `charging_sessions` ADD `received_at` integer;--> statement-breakpoint
CREATE INDEX `charging_sessions_started` ON `charging_sessions` (`installation_id`,`started_at`,`session_id`);--> statement-breakpoint
ALTER TABLE `installations` ADD `latest_utc` integer;--> statement-breakpoint
ALTER TABLE `installations` ADD `latest_received_at` integer;--> statement-breakpoint
-- Written by hand: the facts of samples stored before this version. The newest utc of each installation
-- walks the (utc, installation) key back from its end; the planner counts read the samples once.
UPDATE `installations`
  SET `latest_utc` = (SELECT `utc` FROM `samples` WHERE `installation` = `installations`.`id` ORDER BY `utc` DESC LIMIT 1);--> statement-breakpoint
INSERT INTO `planner_status` (`installation_id`, `sent`, `given_up`, `last_sent_utc`)
  SELECT `installations`.`uuid`, `counts`.`sent`, `counts`.`given_up`, `counts`.`last_sent_utc`
  FROM (SELECT `installation`, sum(`planner_state` = 2) AS `sent`, sum(`planner_state` = 3) AS `given_up`,
      max(CASE WHEN `planner_state` = 2 THEN `utc` END) AS `last_sent_utc`
    FROM `samples` WHERE `planner_state` IN (2, 3) GROUP BY `installation`) AS `counts`
  JOIN `installations` ON `installations`.`id` = `counts`.`installation`;