/** Every table of the database; drizzle-kit generates the migrations from this module. */
export * from './charging/table.ts';
export * from './consumption/table.ts';
export * from './dashboard/table.ts';
export * from './devices/table.ts';
export * from './pairing/table.ts';
export * from './telemetry/table.ts';
export * from './planner/table.ts';
export * from './deletion/table.ts';
