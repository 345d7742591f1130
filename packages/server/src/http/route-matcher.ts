/** Matches request paths against route templates (`/api/project/{project_name}/runs/get`), segment by segment. */
import type { RouteDefinition } from './route.js';

type Segment = { literal: string } | { param: string };

interface CompiledRoute {
  route: RouteDefinition;
  segments: Segment[];
}

export type RouteMatch =
  | { kind: 'found'; route: RouteDefinition; params: Record<string, string> }
  /** The path exists with other methods. */
  | { kind: 'method-not-allowed'; allowed: string[] }
  | { kind: 'not-found' };

function splitPath(path: string): string[] {
  return path.split('/').filter((segment) => segment !== '');
}

function compile(route: RouteDefinition): CompiledRoute {
  return {
    route,
    segments: splitPath(route.path).map((segment) => {
      const param = /^\{([A-Za-z_][A-Za-z0-9_]*)\}$/.exec(segment)?.[1];
      return param ? { param } : { literal: segment };
    }),
  };
}

/** Builds a matcher; throws when two routes have the same method and path shape. */
export function createRouteMatcher(
  routes: readonly RouteDefinition[],
): (method: string, path: string) => RouteMatch {
  const compiled = routes.map(compile);
  const seen = new Set<string>();
  for (const { route, segments } of compiled) {
    const shape = `${route.method} /${segments.map((s) => ('param' in s ? '{}' : s.literal)).join('/')}`;
    if (seen.has(shape)) throw new Error(`Two routes are defined for ${route.method} ${route.path}`);
    seen.add(shape);
  }
  return (method, path) => {
    let parts: string[];
    try {
      parts = splitPath(path).map((part) => decodeURIComponent(part));
    } catch {
      return { kind: 'not-found' };
    }
    const allowed: string[] = [];
    for (const { route, segments } of compiled) {
      if (segments.length !== parts.length) continue;
      const params: Record<string, string> = {};
      const matches = segments.every((segment, index) => {
        const part = parts[index]!;
        if ('literal' in segment) return segment.literal === part;
        params[segment.param] = part;
        return true;
      });
      if (!matches) continue;
      if (route.method === method || (method === 'HEAD' && route.method === 'GET')) {
        return { kind: 'found', route, params };
      }
      allowed.push(route.method);
    }
    return allowed.length > 0 ? { kind: 'method-not-allowed', allowed } : { kind: 'not-found' };
  };
}
