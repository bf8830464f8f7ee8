/**
 * The benchmarks' baselines: a bare `Bun.serve` in its own process answering what the service answers
 * (GET: the health answer; POST: the telemetry answer's shape), doing the least the same request needs
 * (parse the JSON of a POST), without auth, validation or storage. Prints `address=<url>` once listening.
 *
 * With a database path as argument (`bun bench/baseline-server.ts <file>`) it is the durable baseline:
 * each POST's body goes as text to a minimal group-committing writer (bench/baseline-writer.ts), which
 * parses and stores its samples; the answer follows the commit. The least durable work the same
 * request needs on this machine: no auth, validation, savepoints or outbox.
 */
const databasePath = process.argv[2];
const store = databasePath ? groupCommitter(databasePath) : null;

const server = Bun.serve({
  hostname: '127.0.0.1',
  port: 0,
  async fetch(request) {
    if (request.method === 'GET') return Response.json({ status: 'ok' });
    if (store) return Response.json({ stored: await store(await request.text()), droppedCount: 0, dropped: [] });
    const body = (await request.json()) as { samples?: unknown[] };
    return Response.json({ stored: body.samples?.length ?? 0, droppedCount: 0, dropped: [] });
  },
});
console.log(`address=${server.url.href}`);

/**
 * Bodies go to the writer in one message while it is busy with the last group; each is answered with
 * its count of stored samples once its group has committed.
 */
function groupCommitter(path: string): (body: string) => Promise<number> {
  const writer = new Worker(new URL('./baseline-writer.ts', import.meta.url).href);
  writer.postMessage({ path });
  let queued: string[] = [];
  let waiting: ((stored: number) => void)[] = [];
  const sent: ((stored: number) => void)[][] = [];
  let busy = false;
  const send = () => {
    if (busy || queued.length === 0) return;
    busy = true;
    writer.postMessage({ bodies: queued });
    sent.push(waiting);
    queued = [];
    waiting = [];
  };
  writer.onmessage = (event: MessageEvent<number[]>) => {
    busy = false;
    sent.shift()!.forEach((answer, index) => answer(event.data[index]!));
    send();
  };
  return (body) =>
    new Promise((resolve) => {
      queued.push(body);
      waiting.push(resolve);
      if (queued.length === 1) queueMicrotask(send);
    });
}
