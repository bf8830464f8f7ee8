/**
 * The benchmark's baseline: a bare `Bun.serve` that parses the same JSON and answers the same shape,
 * without auth, validation or storage. Prints `address=<url>` once listening.
 */
const server = Bun.serve({
  hostname: '127.0.0.1',
  port: 0,
  async fetch(request) {
    const batch = (await request.json()) as { samples: unknown[] };
    return Response.json({ stored: batch.samples.length, droppedCount: 0, dropped: [] });
  },
});
console.log(`address=${server.url.href}`);
