/**
 * Child process of the committer crash tests: writes devices through the real committer as fast as
 * it can and prints the id of each write once `write()` has resolved (acknowledged). The parent
 * SIGKILLs it at a moment of its choosing and checks that every printed id is in the database.
 * Usage: bun committer-child.ts DATABASE_PATH full|fast PREFIX
 */
import type { Durability } from '../../src/config.ts';
import { openStorage } from '../../src/db/storage.ts';

const [path, durability, prefix] = process.argv.slice(2) as [string, Durability, string];
const storage = await openStorage({ databasePath: path, durability });
process.stdout.write('ready\n');

const IN_FLIGHT = 16;
let next = 0;
async function writeForever(): Promise<never> {
  for (;;) {
    const id = `${prefix}-${next++}`;
    await storage.committer.write('insertDevice', {
      id,
      installationId: '5b0c3c3e-9a51-4c5e-8f55-2f0e7b0c1a01',
      name: null,
      tokenHash: id,
      createdAt: Date.now(),
    });
    process.stdout.write(`${id}\n`);
  }
}
await Promise.all(Array.from({ length: IN_FLIGHT }, writeForever));
