CREATE TABLE `known_addresses` (
	`address` text PRIMARY KEY NOT NULL,
	`last_right_at` integer NOT NULL
);
