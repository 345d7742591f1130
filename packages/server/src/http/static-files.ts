/**
 * The web console's static files (the build of @dstack/web), served at `/`: every file of the
 * build is read once at start-up into memory (the console is a few hundred kB), so a request
 * is a map lookup and no URL can reach a file outside the build. Hashed assets (`/assets/…`,
 * named after their content by Vite) are cached for a year; everything else, index.html first,
 * is revalidated, so a new build is seen at the next load. A path that is no file and looks
 * like none (no extension) is a route of the app: it gets index.html.
 */
import { createHash } from 'node:crypto';
import { readdirSync, readFileSync } from 'node:fs';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { extname, join, relative, sep } from 'node:path';
import { gzipSync } from 'node:zlib';
import { CONSOLE_HEADERS } from './origin-isolation.js';

/**
 * Paths the console never answers, whatever the build holds: the API, the proxies and
 * Prometheus' `/metrics` (a server with metrics off answers it 404, not with the console's page).
 */
const RESERVED_PREFIXES = ['/api', '/proxy', '/metrics'];

const CONTENT_TYPES: Record<string, string> = {
  '.html': 'text/html; charset=utf-8',
  '.js': 'text/javascript; charset=utf-8',
  '.mjs': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
  '.json': 'application/json; charset=utf-8',
  '.webmanifest': 'application/manifest+json; charset=utf-8',
  '.map': 'application/json; charset=utf-8',
  '.txt': 'text/plain; charset=utf-8',
  '.svg': 'image/svg+xml',
  '.png': 'image/png',
  '.jpg': 'image/jpeg',
  '.jpeg': 'image/jpeg',
  '.gif': 'image/gif',
  '.webp': 'image/webp',
  '.ico': 'image/x-icon',
  '.woff': 'font/woff',
  '.woff2': 'font/woff2',
};

const IMMUTABLE = 'public, max-age=31536000, immutable';
const REVALIDATE = 'no-cache';
/** Below this size gzip saves less than its header costs. */
const MIN_GZIP_BYTES = 1024;

interface StaticFile {
  body: Buffer;
  /** The gzip of `body` when it is text worth compressing. */
  gzipped: Buffer | null;
  contentType: string;
  cacheControl: string;
  etag: string;
}

export interface StaticSite {
  /** The directory the files were read from. */
  directory: string;
  /**
   * Answers a GET or HEAD for `pathname` when the console has it (a file, or index.html for a
   * route of the app); false when the request is not the console's (an `/api` path, another
   * method, a missing file): the caller answers 404 as for any unknown path.
   */
  serve(request: IncomingMessage, response: ServerResponse, pathname: string): boolean;
}

function listFiles(directory: string): string[] {
  return readdirSync(directory, { withFileTypes: true, recursive: true })
    .filter((entry) => entry.isFile())
    .map((entry) => join(entry.parentPath, entry.name));
}

function isReserved(pathname: string): boolean {
  return RESERVED_PREFIXES.some((prefix) => pathname === prefix || pathname.startsWith(`${prefix}/`));
}

function loadFile(directory: string, file: string): [string, StaticFile] {
  const urlPath = `/${relative(directory, file).split(sep).join('/')}`;
  const body = readFileSync(file);
  const contentType = CONTENT_TYPES[extname(file).toLowerCase()] ?? 'application/octet-stream';
  const compressible = /^(text\/|application\/(json|manifest)|image\/svg)/.test(contentType);
  return [
    urlPath,
    {
      body,
      gzipped: compressible && body.length >= MIN_GZIP_BYTES ? gzipSync(body) : null,
      contentType,
      cacheControl: urlPath.startsWith('/assets/') ? IMMUTABLE : REVALIDATE,
      etag: `"${createHash('sha256').update(body).digest('base64url').slice(0, 27)}"`,
    },
  ];
}

/**
 * Reads the build in `directory`; null when it has no index.html (the console was not built:
 * the server runs without it).
 */
export function loadStaticSite(directory: string): StaticSite | null {
  let files: Map<string, StaticFile>;
  try {
    files = new Map(listFiles(directory).map((file) => loadFile(directory, file)));
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return null;
    throw error;
  }
  const index = files.get('/index.html');
  if (!index) return null;

  function write(request: IncomingMessage, response: ServerResponse, file: StaticFile): void {
    const headers: Record<string, string | number> = {
      'content-type': file.contentType,
      'cache-control': file.cacheControl,
      etag: file.etag,
      'x-content-type-options': 'nosniff',
      // Its own policy, replacing the sandbox the HTTP handler gives every other answer.
      ...CONSOLE_HEADERS,
    };
    if (file.gzipped) headers.vary = 'accept-encoding';
    if (request.headers['if-none-match'] === file.etag) {
      response.writeHead(304, headers);
      response.end();
      return;
    }
    const gzip = file.gzipped !== null && /\bgzip\b/.test(String(request.headers['accept-encoding'] ?? ''));
    const body = gzip ? file.gzipped! : file.body;
    if (gzip) headers['content-encoding'] = 'gzip';
    headers['content-length'] = body.length;
    response.writeHead(200, headers);
    response.end(request.method === 'HEAD' ? undefined : body);
  }

  return {
    directory,
    serve(request, response, pathname) {
      if ((request.method !== 'GET' && request.method !== 'HEAD') || isReserved(pathname)) return false;
      let decoded: string;
      try {
        decoded = decodeURIComponent(pathname);
      } catch {
        return false;
      }
      const file = files.get(decoded === '/' ? '/index.html' : decoded);
      if (file) {
        write(request, response, file);
        return true;
      }
      // A missing file (an old asset's hash) is a 404, not the app's page in its place.
      if (extname(decoded) !== '') return false;
      write(request, response, index);
      return true;
    },
  };
}
