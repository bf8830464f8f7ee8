CREATE TABLE `dashboard_password` (
	`id` integer PRIMARY KEY NOT NULL,
	`salt` text NOT NULL,
	`fingerprint` text NOT NULL
);
