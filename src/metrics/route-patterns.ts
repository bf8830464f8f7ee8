/** The route pattern a path falls under (`/v1/consumption/history/*`), the `route` label of the request metrics. */

/** The label of a path that no route serves (a 404, a refused Host): one series for them all. */
export const UNMATCHED = 'unmatched';

/** Builds the lookup from the app's routes: exact paths at once, then the patterns in the order declared. */
export function routePatterns(routes: readonly { path: string }[]): (path: string) => string {
  const exact = new Set<string>();
  const patterns: { pattern: string; segments: string[] }[] = [];
  for (const { path } of routes) {
    if (/[:*]/.test(path)) patterns.push({ pattern: path, segments: path.split('/') });
    else exact.add(path);
  }
  const lookup = (path: string) => {
    if (exact.has(path)) return path;
    const segments = path.split('/');
    for (const { pattern, segments: wanted } of patterns) if (matches(wanted, segments)) return pattern;
    return UNMATCHED;
  };
  // Elysia serves a path with a trailing slash as the route without it (`/v1/ready/` is `/v1/ready`).
  return (path) => {
    const route = lookup(path);
    return route === UNMATCHED && path.length > 1 && path.endsWith('/') ? lookup(path.slice(0, -1)) : route;
  };
}

/** `:name` takes one segment that is not empty; a final `*` takes the rest, empty or not. */
function matches(wanted: string[], segments: string[]): boolean {
  for (let i = 0; i < wanted.length; i++) {
    const part = wanted[i]!;
    if (part === '*' && i === wanted.length - 1) return segments.length >= wanted.length - 1;
    const segment = segments[i];
    if (segment === undefined) return false;
    if (part.startsWith(':') ? segment === '' : part !== segment) return false;
  }
  return segments.length === wanted.length;
}
