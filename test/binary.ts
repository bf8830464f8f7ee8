/** The compiled binary for end-to-end tests: built once per test run, started on temp databases. */
import { copyFileSync, existsSync, readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { OWNER_TOKEN, tempDir } from './support.ts';

const ROOT = resolve(import.meta.dir, '..');
let built: Promise<string> | null = null;

/** Builds `dist/ev-ingest` with the project's build script and copies it alone into a fresh folder. */
export function compiledBinary(): Promise<string> {
  built ??= (async () => {
    const build = Bun.spawn([process.execPath, 'run', 'build'], { cwd: ROOT, stdout: 'pipe', stderr: 'pipe' });
    if ((await build.exited) !== 0) throw new Error(`build failed: ${await new Response(build.stderr).text()}`);
    const binary = join(tempDir('ev-ingest-bin-'), 'ev-ingest');
    copyFileSync(join(ROOT, 'dist', 'ev-ingest'), binary);
    return binary;
  })();
  return built;
}

let starts = 0;

const running = new Set<Bun.Subprocess>();

/** Ends every binary still running: a test failing before its stop must not leave its server behind (cleanup.ts). */
export function killStrayBinaries(): void {
  for (const child of running) child.kill('SIGKILL');
}

export interface RunningBinary {
  url: URL;
  process: Bun.Subprocess;
  /** Everything the process has written to stdout so far. */
  output(): string;
  /** Sends a signal and resolves with the exit code. */
  stop(signal?: NodeJS.Signals): Promise<number>;
}

/** What a start came to: a server, or a process that ended before serving (a refused start). */
export type Start = { running: RunningBinary } | { exited: { code: number; stdout: string; stderr: string } };

/** Starts the binary and waits for it to serve (see startBinary) or to exit. */
export async function launchBinary(binary: string, env: Record<string, string>, cwd: string): Promise<Start> {
  // One per start: a restart must not read the last one's address.
  const logPath = join(cwd, `ev-ingest.${++starts}.stdout.log`);
  const child = Bun.spawn([binary], {
    cwd,
    env: { PATH: process.env.PATH ?? '', HOST: '127.0.0.1', PORT: '0', ...env },
    stdin: 'ignore',
    stdout: Bun.file(logPath),
    stderr: 'pipe',
  });
  running.add(child);
  child.exited.then(() => running.delete(child));
  const output = () => (existsSync(logPath) ? readFileSync(logPath, 'utf8') : '');
  const deadline = Date.now() + 10_000;
  let address: string | undefined;
  while (!(address = / info started .*address=(\S+)/.exec(output())?.[1])) {
    if (child.exitCode !== null) {
      return {
        exited: { code: await child.exited, stdout: output(), stderr: await new Response(child.stderr).text() },
      };
    }
    if (Date.now() > deadline) {
      child.kill();
      throw new Error(`did not start in time: ${output()}${await new Response(child.stderr).text()}`);
    }
    await Bun.sleep(5);
  }
  return {
    running: {
      url: new URL(address),
      process: child,
      output,
      async stop(signal = 'SIGTERM') {
        child.kill(signal);
        return child.exited;
      },
    },
  };
}

/** A request to a running binary with the owner's token; a `body` goes as JSON. */
export function ownerRequest(
  server: Pick<RunningBinary, 'url'>,
  method: string,
  path: string,
  body?: unknown,
): Promise<Response> {
  return fetch(new URL(path, server.url), {
    method,
    headers: { authorization: `Bearer ${OWNER_TOKEN}`, 'content-type': 'application/json' },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
}

/**
 * Starts the binary and waits for its `started` line, which names the address it listens on.
 * Standard output goes to a file in `cwd`, so that reading it costs the process under test nothing.
 */
export async function startBinary(binary: string, env: Record<string, string>, cwd: string): Promise<RunningBinary> {
  const start = await launchBinary(binary, env, cwd);
  if ('exited' in start)
    throw new Error(`did not start (exit ${start.exited.code}): ${start.exited.stdout}${start.exited.stderr}`);
  return start.running;
}
