/**
 * The baseline: a bare `Bun.serve` in its own process answering what the service answers, doing the
 * least the same request needs (parse the JSON for POSTs). Prints `listening <url>`.
 */
const server = Bun.serve({
  hostname: '127.0.0.1',
  port: 0,
  async fetch(request) {
    if (request.method === 'GET') return Response.json({ status: 'ok' });
    const body = (await request.json()) as { samples?: unknown[] };
    const stored = Array.isArray(body.samples) ? body.samples.length : 0;
    if (stored === 0 && !Array.isArray(body.samples)) return new Response(null, { status: 204 });
    return Response.json({ stored, droppedCount: 0, dropped: [] });
  },
});
console.log(`listening ${server.url.href}`);
