/**
 * A private Git server on loopback for the end-to-end tests: `git http-backend` (the smart HTTP
 * protocol, as a CGI program) behind a Node HTTP server that answers 401 to any request whose
 * Basic auth password is not the token. Serves every repo under `projectRoot`.
 */
import { spawn } from 'node:child_process';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

export interface GitHttpServer {
  /** `http://127.0.0.1:PORT`. */
  url: string;
  /** Requests refused for their credentials so far. */
  refusals(): number;
  close(): Promise<void>;
}

/** `token` null: a public server, every request served. */
export async function startGitHttpServer(projectRoot: string, token: string | null): Promise<GitHttpServer> {
  let refusals = 0;
  const server: Server = createServer((request, response) => {
    if (token !== null && passwordOf(request) !== token) {
      refusals += 1;
      response.writeHead(401, { 'www-authenticate': 'Basic realm="git"' }).end();
      return;
    }
    runHttpBackend(projectRoot, request, response);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    refusals: () => refusals,
    close: () =>
      new Promise((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

function passwordOf(request: IncomingMessage): string | null {
  const header = request.headers.authorization;
  if (!header?.startsWith('Basic ')) return null;
  const decoded = Buffer.from(header.slice('Basic '.length), 'base64').toString('utf8');
  const colon = decoded.indexOf(':');
  return colon < 0 ? null : decoded.slice(colon + 1);
}

/** Runs the CGI for one request: the body to its stdin, its `Status:` and headers back as HTTP. */
function runHttpBackend(projectRoot: string, request: IncomingMessage, response: ServerResponse): void {
  const url = new URL(request.url ?? '/', 'http://localhost');
  const child = spawn('git', ['http-backend'], {
    env: {
      PATH: process.env.PATH ?? '/usr/bin:/bin',
      GIT_PROJECT_ROOT: projectRoot,
      GIT_HTTP_EXPORT_ALL: '1',
      REQUEST_METHOD: request.method ?? 'GET',
      PATH_INFO: decodeURIComponent(url.pathname),
      QUERY_STRING: url.search.replace(/^\?/, ''),
      CONTENT_TYPE: request.headers['content-type'] ?? '',
      REMOTE_USER: 'git',
      REMOTE_ADDR: '127.0.0.1',
      ...(request.headers['content-encoding']
        ? { HTTP_CONTENT_ENCODING: request.headers['content-encoding'] }
        : {}),
      ...(request.headers['git-protocol'] ? { GIT_PROTOCOL: String(request.headers['git-protocol']) } : {}),
    },
    stdio: ['pipe', 'pipe', 'ignore'],
  });
  request.pipe(child.stdin);
  child.stdin.on('error', () => {});
  let head = Buffer.alloc(0);
  let headersSent = false;
  child.stdout.on('data', (chunk: Buffer) => {
    if (headersSent) {
      response.write(chunk);
      return;
    }
    head = Buffer.concat([head, chunk]);
    const end = head.indexOf('\r\n\r\n');
    if (end < 0) return;
    const lines = head.subarray(0, end).toString('latin1').split('\r\n');
    let status = 200;
    const headers: Record<string, string> = {};
    for (const line of lines) {
      const colon = line.indexOf(':');
      const name = line.slice(0, colon).trim();
      const value = line.slice(colon + 1).trim();
      if (name.toLowerCase() === 'status') status = Number.parseInt(value, 10);
      else headers[name] = value;
    }
    response.writeHead(status, headers);
    headersSent = true;
    response.write(head.subarray(end + 4));
  });
  child.once('close', () => {
    if (!headersSent) response.writeHead(502);
    response.end();
  });
  child.once('error', () => {
    if (!headersSent) response.writeHead(500);
    response.end();
  });
}
