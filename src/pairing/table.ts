import { integer, sqliteTable, text } from 'drizzle-orm/sqlite-core';

/** Client addresses where the approval password was given right: the lockout's backstop spares them for 30 days. */
export const knownAddresses = sqliteTable('known_addresses', {
  /** As the limits count it: an IPv4 address or an IPv6 /64. */
  address: text('address').primaryKey(),
  /** Unix milliseconds of the last right password from the address. */
  lastRightAt: integer('last_right_at').notNull(),
});
