/** The compiled binary for end-to-end tests: built once per test run, started on temp databases. */
import { copyFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { tempDir } from './support.ts';

const ROOT = resolve(import.meta.dir, '..');
let built: Promise<string> | null = null;

/** Builds `dist/ev-ingest` with the project's build script and copies it alone into a fresh folder. */
export function compiledBinary(): Promise<string> {
  built ??= (async () => {
    const build = Bun.spawn(['bun', 'run', 'build'], { cwd: ROOT, stdout: 'pipe', stderr: 'pipe' });
    if ((await build.exited) !== 0) throw new Error(`build failed: ${await new Response(build.stderr).text()}`);
    const binary = join(tempDir('ev-ingest-bin-'), 'ev-ingest');
    copyFileSync(join(ROOT, 'dist', 'ev-ingest'), binary);
    return binary;
  })();
  return built;
}

export interface RunningBinary {
  url: URL;
  process: Bun.Subprocess<'ignore', 'pipe', 'pipe'>;
  /** Everything the process has written to stdout so far. */
  output(): string;
  /** Sends a signal and resolves with the exit code. */
  stop(signal?: NodeJS.Signals): Promise<number>;
}

/** Starts the binary and waits for its `started` line, which names the address it listens on. */
export async function startBinary(binary: string, env: Record<string, string>, cwd: string): Promise<RunningBinary> {
  const child = Bun.spawn([binary], {
    cwd,
    env: { PATH: process.env.PATH ?? '', HOST: '127.0.0.1', PORT: '0', ...env },
    stdin: 'ignore',
    stdout: 'pipe',
    stderr: 'pipe',
  });
  let stdout = '';
  const reader = child.stdout.getReader();
  const decoder = new TextDecoder();
  const address = await new Promise<string>((resolveAddress, reject) => {
    const timer = setTimeout(() => reject(new Error(`no start within 10 s; output: ${stdout}`)), 10_000);
    (async () => {
      for (;;) {
        const { done, value } = await reader.read();
        if (done) break;
        stdout += decoder.decode(value, { stream: true });
        const match = / info started .*address=(\S+)/.exec(stdout);
        if (match) {
          clearTimeout(timer);
          resolveAddress(match[1]!);
        }
      }
      clearTimeout(timer);
      reject(new Error(`exited before starting: ${stdout}${await new Response(child.stderr).text()}`));
    })();
  });
  return {
    url: new URL(address),
    process: child,
    output: () => stdout,
    async stop(signal = 'SIGTERM') {
      child.kill(signal);
      return child.exited;
    },
  };
}
