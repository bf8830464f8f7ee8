/** Shared by the owner's read tests: stored days of consumption, the status of an installation never forwarded. */
import { expect } from 'bun:test';
import { embeddedMigrations } from '../src/db/migrations.macro.ts';
import { consumptionChunk, type TestService } from './support.ts';

export const MIGRATIONS = embeddedMigrations();
/** The owner data's migration, found by what it makes: the lead may renumber it when merging branches. */
export const OWNER_DATA = MIGRATIONS.findIndex((migration) =>
  migration.sql.some((part) => part.includes('CREATE TABLE `planner_status`')),
);

/** Stores one chunk a day (`[date, km, sohPercent?]`, 2 kWh, half an hour, 1 % each) and checks each was taken. */
export async function putDays(service: Pick<TestService, 'request'>, days: (readonly [string, number, number?])[]) {
  for (const [date, km, sohPercent] of days) {
    const day = { km, kwh: 2, hours: 0.5, socDrop: 1 };
    const chunk = consumptionChunk({ date, recordedAt: Date.parse(date) + 1000, day, sohPercent });
    expect((await service.request('PUT', '/v1/consumption/daily', { body: chunk })).status).toBe(204);
  }
}

/** The forwarding status of an installation with nothing sent, given up, waiting or failed. */
export const NOTHING_FORWARDED = {
  waiting: 0,
  sent: 0,
  givenUp: 0,
  lastSentAt: null,
  lastSentUtc: null,
  lastFailure: null,
  nextAttemptAt: null,
};
