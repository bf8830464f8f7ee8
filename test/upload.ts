/** Raw HTTP over node:net: requests as bytes, and uploads (at full speed or trickled) sending on until answered. */
import { connect } from 'node:net';

export interface UploadOptions {
  port: number;
  path: string;
  token: string;
  bytes: number;
  /** `chunked` sends Transfer-Encoding: chunked; `length` declares the size in Content-Length. */
  framing: 'chunked' | 'length';
  /** Written on the same connection once the body has gone: the next request. */
  then?: string;
}

export interface Exchange {
  /** Everything the server sent back (latin1). */
  reply: string;
  /** The socket error (e.g. ECONNRESET, EPIPE), when there was one. */
  error: string | null;
  /** True when the client's deadline, not the server, ended the connection. */
  timedOut: boolean;
}

export interface UploadResult extends Exchange {
  /** Body bytes the kernel took before the connection ended (the whole body when it was not cut off). */
  sent: number;
}

/** The answer's status line, whether it closes the connection, its body, and whether the server ended it. */
export function parsedReply({ reply, timedOut }: Pick<Exchange, 'reply' | 'timedOut'>) {
  const head = reply.slice(0, reply.indexOf('\r\n\r\n')).split('\r\n');
  return {
    status: head[0] ?? '',
    closes: head.includes('Connection: close'),
    body: reply.slice(reply.indexOf('\r\n\r\n') + 4),
    closedByServer: !timedOut,
  };
}

/** The answer's header fields, by lower-cased name. */
export function replyHeaders(reply: string): Record<string, string> {
  const lines = reply.slice(0, reply.indexOf('\r\n\r\n')).split('\r\n').slice(1);
  return Object.fromEntries(
    lines.map((line) => [line.slice(0, line.indexOf(':')).toLowerCase(), line.slice(line.indexOf(':') + 1).trim()]),
  );
}

type Write = (data: string | Buffer) => Promise<boolean>;

const PIECE = 64 * 1024;

/** Lets `talk` write (false once the connection is gone); resolves when the server closes it or after `timeoutMs`. */
export function exchange(port: number, talk: (write: Write) => unknown, timeoutMs: number): Promise<Exchange> {
  return new Promise((resolve) => {
    const socket = connect(port, '127.0.0.1');
    const result: Exchange = { reply: '', error: null, timedOut: false };
    const timer = setTimeout(() => {
      result.timedOut = true;
      socket.destroy();
    }, timeoutMs);
    socket.on('data', (data) => void (result.reply += data.toString('latin1')));
    socket.on('error', (error: NodeJS.ErrnoException) => void (result.error ??= error.code ?? error.message));
    socket.on('close', () => {
      clearTimeout(timer);
      resolve(result);
    });
    const write: Write = (data) =>
      new Promise((done) => socket.write(data, (error) => done(!error && !socket.destroyed)));
    socket.on('connect', () => talk(write));
  });
}

/** Sends `text` as is; resolves with what came back once the server closes the connection (or after `timeoutMs`). */
export function rawRequest(port: number, text: string, timeoutMs = 5_000): Promise<Exchange> {
  return exchange(port, (write) => write(text), timeoutMs);
}

/** Sends the upload (spaces, 64 KiB at a time); resolves once the server closes the connection or after `timeoutMs`. */
export function upload(options: UploadOptions, timeoutMs = 20_000): Promise<UploadResult> {
  const spaces = Buffer.alloc(PIECE, 0x20);
  return send(
    { ...options, piece: (_, length) => spaces.subarray(0, length), pieceBytes: PIECE, everyMs: 0 },
    timeoutMs,
  );
}

export interface TrickleOptions extends Omit<UploadOptions, 'bytes'> {
  body: Buffer;
  /** The body goes `pieceBytes` at a time, one piece every `everyMs` (a car on a slow link). */
  pieceBytes: number;
  everyMs: number;
}

/** Sends the head at once, the body piece by piece; resolves once the server closes it or after `timeoutMs`. */
export function trickle({ body, ...options }: TrickleOptions, timeoutMs: number): Promise<UploadResult> {
  return send(
    { ...options, bytes: body.length, piece: (offset, length) => body.subarray(offset, offset + length) },
    timeoutMs,
  );
}

interface Sending extends UploadOptions {
  /** The body's bytes from `offset`, `length` of them. */
  piece: (offset: number, length: number) => Buffer;
  pieceBytes: number;
  everyMs: number;
}

async function send(
  { port, path, token, bytes, framing, then, piece, pieceBytes, everyMs }: Sending,
  timeoutMs: number,
): Promise<UploadResult> {
  let sent = 0;
  const result = await exchange(
    port,
    async (write) => {
      const framingHeader = framing === 'chunked' ? 'Transfer-Encoding: chunked' : `Content-Length: ${bytes}`;
      const head = `POST ${path} HTTP/1.1\r\nHost: localhost\r\nAuthorization: Bearer ${token}\r\n`;
      if (!(await write(`${head}Content-Type: application/json\r\n${framingHeader}\r\n\r\n`))) return;
      const frame =
        framing === 'chunked'
          ? (data: Buffer) => Buffer.concat([Buffer.from(`${data.length.toString(16)}\r\n`), data, Buffer.from('\r\n')])
          : (data: Buffer) => data;
      while (sent < bytes) {
        if (everyMs > 0) await Bun.sleep(everyMs);
        const data = piece(sent, Math.min(pieceBytes, bytes - sent));
        if (!(await write(frame(data)))) return;
        sent += data.length;
      }
      if (framing === 'chunked' && !(await write('0\r\n\r\n'))) return;
      if (then !== undefined) await write(then);
    },
    timeoutMs,
  );
  return { ...result, sent };
}
