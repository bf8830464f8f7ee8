/** Every table of the database; drizzle-kit generates the migrations from this module. */
export * from '../charging/schema.ts';
export * from '../consumption/schema.ts';
export * from '../dashboard/table.ts';
export * from '../devices/schema.ts';
export * from '../pairing/schema.ts';
export * from '../telemetry/schema.ts';
export * from '../planner/table.ts';
export * from '../deletion/table.ts';
