/**
 * The benchmarks' baseline: a bare `Bun.serve` in its own process answering what the service answers
 * (GET: the health answer; POST: the telemetry answer's shape), doing the least the same request needs
 * (parse the JSON of a POST), without auth, validation or storage. Prints `address=<url>` once listening.
 */
const server = Bun.serve({
  hostname: '127.0.0.1',
  port: 0,
  async fetch(request) {
    if (request.method === 'GET') return Response.json({ status: 'ok' });
    const body = (await request.json()) as { samples?: unknown[] };
    return Response.json({ stored: body.samples?.length ?? 0, droppedCount: 0, dropped: [] });
  },
});
console.log(`address=${server.url.href}`);
