#!/usr/bin/env bun
/** The binary: `ev-ingest` serves; other commands manage the database without the HTTP side. */
import { ConfigError } from './config.ts';
import { healthcheckCommand, HEALTHCHECK_USAGE } from './cli/healthcheck.ts';
import { backupCommand, BACKUP_USAGE } from './cli/backup.ts';
import { StorageError } from './db/open.ts';
import { devicesCommand, DEVICES_USAGE } from './cli/devices.ts';
import { purgeCommand, PURGE_USAGE } from './cli/purge.ts';
import { statusCommand, STATUS_USAGE } from './cli/status.ts';
import { CONFIGURATION, SERVE_USAGE, serveCommand } from './cli/serve.ts';
import { VERSION } from './version.ts';

const USAGE = `ev-ingest ${VERSION}: self-hosted ingest service for electric cars

Usage:
${SERVE_USAGE}
${DEVICES_USAGE}
${BACKUP_USAGE}
${STATUS_USAGE}
${PURGE_USAGE}
${HEALTHCHECK_USAGE}
  ev-ingest --help               print this help
  ev-ingest --version            print the version

${CONFIGURATION}
`;

async function main(args: string[]): Promise<number> {
  const [command = 'serve'] = args;
  switch (command) {
    case '--help':
    case '-h':
    case 'help':
      process.stdout.write(USAGE);
      return 0;
    case '--version':
    case '-v':
      process.stdout.write(`ev-ingest ${VERSION}\n`);
      return 0;
    case 'serve':
      return serveCommand(args.slice(1));
    case 'devices':
      return devicesCommand(args.slice(1));
    case 'backup':
      return backupCommand(args.slice(1));
    case 'status':
      return statusCommand(args.slice(1));
    case 'purge':
      return purgeCommand(args.slice(1));
    case 'healthcheck':
      return healthcheckCommand(args.slice(1));
    default:
      process.stderr.write(`ev-ingest: unknown command ${JSON.stringify(command)}\n\n${USAGE}`);
      return 2;
  }
}

try {
  const code = await main(process.argv.slice(2));
  process.exit(code);
} catch (error) {
  if (error instanceof ConfigError || error instanceof StorageError) {
    process.stderr.write(`ev-ingest: ${error.message}\n`);
    process.exit(1);
  }
  throw error;
}
