CREATE TABLE `dashboard_sessions` (
	`token_hash` text PRIMARY KEY NOT NULL,
	`created_at` integer NOT NULL,
	`expires_at` integer NOT NULL
);
--> statement-breakpoint
CREATE INDEX `dashboard_sessions_expiry` ON `dashboard_sessions` (`expires_at`);