/** `ev-ingest serve`, the default command: the HTTP server, configured from the environment and ./.env. */
import { readServerEnvironment, serveConfig } from '../config.ts';
import { createLogger } from '../log.ts';
import { exitWhenStopped, serve } from '../server.ts';
import { helpOrOption, toStderr, toStdout, usage } from './command.ts';

export const SERVE_USAGE = `  ev-ingest [serve]              serve (configuration from the environment and ./.env)`;

export const CONFIGURATION = `Configuration: INGEST_TOKEN (required, at least 24 printable ASCII characters),
APPROVAL_PASSWORD, PUBLIC_URL, TRUST_PROXY, HOST, PORT, DATABASE_PATH, PLANNER_URL,
PLANNER_API_KEY, PLANNER_TOKEN, PLANNER_TOKENS, LOG_LEVEL, LOG_FORMAT, DURABILITY,
METRICS_LISTEN, TELEMETRY_RETENTION_DAYS. Secrets also accept <NAME>_FILE. The devices, backup,
status and purge commands need only DATABASE_PATH, healthcheck only HOST and PORT. See
docs/configuration.md.`;

/** `ev-ingest serve` takes no arguments: one given by mistake must not go unnoticed while it serves. */
export async function serveCommand(args: string[]): Promise<number> {
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
