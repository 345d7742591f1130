/** A compiled path pattern: `/instances/:id` matches `/instances/i-1` with `{ id: 'i-1' }`. */
export interface RoutePattern {
  readonly source: string;
  /** The path parameters when `path` matches, else null. */
  match(path: string): Record<string, string> | null;
}

/**
 * Compiles `/a/:name/b` (a segment per parameter) or a trailing `/*`
 * (any rest, given as the `*` parameter). Other characters match literally.
 */
export function compileRoutePattern(source: string): RoutePattern {
  if (!source.startsWith('/')) {
    throw new Error(`Emulator route path must start with "/", got ${JSON.stringify(source)}`);
  }
  const names: string[] = [];
  const expression = source
    .split('/')
    .map((segment, index, segments) => {
      if (segment.startsWith(':')) {
        const name = segment.slice(1);
        if (!/^[A-Za-z_][A-Za-z0-9_]*$/.test(name)) {
          throw new Error(`Emulator route ${JSON.stringify(source)} has an invalid parameter ":${name}"`);
        }
        names.push(name);
        return '([^/]+)';
      }
      if (segment === '*' && index === segments.length - 1) {
        names.push('*');
        return '(.*)';
      }
      return segment.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
    })
    .join('/');
  const regex = new RegExp(`^${expression}/?$`);
  return {
    source,
    match(path) {
      const found = regex.exec(path);
      if (!found) return null;
      const params: Record<string, string> = {};
      names.forEach((name, index) => {
        params[name] = decodeURIComponent(found[index + 1] ?? '');
      });
      return params;
    },
  };
}
