#!/usr/bin/env bun
/** The binary: `ev-ingest` serves; other commands manage the database without the HTTP side. */
import { helpOrOption, toStderr, toStdout, usage } from './cli/command.ts';
import { ConfigError, readServerEnvironment, serveConfig } from './config.ts';
import { healthcheckCommand, HEALTHCHECK_USAGE } from './cli/healthcheck.ts';
import { backupCommand, BACKUP_USAGE } from './db/backup.ts';
import { StorageError } from './db/open.ts';
import { devicesCommand, DEVICES_USAGE } from './cli/devices.ts';
import { purgeCommand, PURGE_USAGE } from './cli/purge.ts';
import { createLogger } from './log.ts';
import { statusCommand, STATUS_USAGE } from './cli/status.ts';
import { exitWhenStopped, serve } from './server.ts';
import { VERSION } from './version.ts';

const SERVE_USAGE = `  ev-ingest [serve]              serve (configuration from the environment and ./.env)`;

const CONFIGURATION = `Configuration: INGEST_TOKEN (required, at least 24 printable ASCII characters),
APPROVAL_PASSWORD, PUBLIC_URL, TRUST_PROXY, HOST, PORT, DATABASE_PATH, PLANNER_URL,
PLANNER_API_KEY, PLANNER_TOKEN, PLANNER_TOKENS, LOG_LEVEL, LOG_FORMAT, DURABILITY,
METRICS_LISTEN, TELEMETRY_RETENTION_DAYS. Secrets also accept <NAME>_FILE. The devices, backup,
status and purge commands need only DATABASE_PATH, healthcheck only HOST and PORT. See
docs/configuration.md.`;

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

/** `ev-ingest serve` takes no arguments: one given by mistake must not go unnoticed while it serves. */
async function serveCommand(args: string[]): Promise<number> {
  const help = `${SERVE_USAGE}\n\n${CONFIGURATION}`;
  const notOperands = helpOrOption(args, help, toStdout, toStderr);
  if (notOperands !== undefined) return notOperands;
  if (args.length === 0) return runServer();
  toStderr(`ev-ingest: serve takes no arguments, not ${JSON.stringify(args[0])}\n`);
  return usage(toStderr, help);
}

async function runServer(): Promise<number> {
  const config = serveConfig(readServerEnvironment());
  const log = createLogger(config.logLevel, undefined, config.logFormat);
  process.on('exit', () => log.flush()); // lines still buffered when the process ends are written
  exitWhenStopped(await serve(config, log), log);
  return new Promise<number>(() => {}); // serves until a signal or its writer's failure
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
