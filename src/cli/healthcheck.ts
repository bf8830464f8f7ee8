/** `ev-ingest healthcheck [URL]`: asks `/v1/ready`; exit 0 on a 200 within 5 s, else 1 (for images without curl). */
import { helpOrOption, toStderr, toStdout, usage, type Out } from './command.ts';
import { isHttpUrl, listenAddress, readEnvironment, type Env } from '../config.ts';
import { limits } from '../limits.ts';

export const HEALTHCHECK_USAGE = `  ev-ingest healthcheck [URL]    exit 0 if URL answers 200 within 5 s, else 1
                                 (default http://HOST:PORT/v1/ready)`;

export async function healthcheckCommand(args: string[], out: Out = toStdout, err: Out = toStderr): Promise<number> {
  const notOperands = helpOrOption(args, HEALTHCHECK_USAGE, out, err);
  if (notOperands !== undefined) return notOperands;
  if (args.length > 1) return usage(err, HEALTHCHECK_USAGE);
  const url = args[0] ?? readyUrl(readEnvironment());
  if (!isHttpUrl(url)) {
    err(`ev-ingest: healthcheck needs an http:// or https:// URL, not ${JSON.stringify(url)}\n`);
    return 2;
  }
  const verdict = await ask(url);
  (verdict.ready ? out : err)(`${verdict.said}\n`);
  return verdict.ready ? 0 : 1;
}

/** The server's own `/v1/ready`; a wildcard address is asked on loopback, where the server also listens. */
function readyUrl(env: Env): string {
  const { host, port } = listenAddress(env);
  const loopback = host === '0.0.0.0' ? '127.0.0.1' : host === '::' ? '::1' : host;
  return `http://${loopback.includes(':') ? `[${loopback}]` : loopback}:${port}/v1/ready`;
}

/** One request, answer and body within the deadline. */
async function ask(url: string): Promise<{ ready: boolean; said: string }> {
  try {
    const response = await fetch(url, { signal: AbortSignal.timeout(limits.healthcheckMs), redirect: 'manual' });
    const body = (await response.text()).slice(0, 200);
    return { ready: response.status === 200, said: `${url}: ${response.status} ${body}` };
  } catch (error) {
    const timedOut = (error as Error).name === 'TimeoutError';
    return {
      ready: false,
      said: `${url}: ${timedOut ? `no answer within ${limits.healthcheckMs / 1000} s` : (error as Error).message}`,
    };
  }
}
