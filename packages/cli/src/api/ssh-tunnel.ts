/**
 * The server's SSH route: `GET /proxy/ssh/{project}/{run}?job_num=&replica_num=` upgraded to
 * `ssh`, after which the socket carries SSH-2 to the job's runner. Used raw by `dstack
 * ssh-proxy` (OpenSSH's ProxyCommand) and by the CLI's own ssh2 client for port forwarding.
 */
import { request as httpRequest, type IncomingMessage } from 'node:http';
import { request as httpsRequest } from 'node:https';
import type { Socket } from 'node:net';
import {
  InvalidTokenError,
  isTokenRejected,
  isUnreachableError,
  parseErrorDetails,
  ServerApiError,
  ServerTimeoutError,
  ServerUnreachableError,
} from './api-errors.js';

export interface SshTunnelTarget {
  /** The server URL, e.g. `http://127.0.0.1:3000`. */
  serverUrl: string;
  /** The user's token, sent as `Authorization: Bearer <token>`. */
  token: string;
  projectName: string;
  runName: string;
  /** The job of the replica. Default 0. */
  jobNum?: number;
  /** The replica. Default 0. */
  replicaNum?: number;
  /** Aborts the request before the server switched protocols. */
  signal?: AbortSignal;
  /** Milliseconds to wait for the server's answer (not limiting the tunnel). Default: no limit. */
  timeoutMs?: number;
}

/** The path of the SSH route, with its query. */
function sshTunnelPath(target: SshTunnelTarget): string {
  const query = new URLSearchParams({
    job_num: String(target.jobNum ?? 0),
    replica_num: String(target.replicaNum ?? 0),
  });
  return `/proxy/ssh/${encodeURIComponent(target.projectName)}/${encodeURIComponent(target.runName)}?${query}`;
}

async function readText(response: IncomingMessage): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const chunk of response) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks).toString('utf8');
}

/** A refused upgrade as the error the CLI reports: the server's JSON message, or the token's rejection. */
async function refusal(response: IncomingMessage, target: SshTunnelTarget, path: string): Promise<Error> {
  const text = await readText(response);
  const statusCode = response.statusCode ?? 0;
  const details = parseErrorDetails(statusCode, text);
  if (isTokenRejected(statusCode, details))
    return new InvalidTokenError(target.serverUrl, target.projectName);
  return new ServerApiError(path.replace(/\?.*$/, ''), statusCode, details);
}

/**
 * Opens the tunnel: resolves with the socket once the server answered 101 (bytes the server
 * sent right after its answer are put back into the socket). Any other answer rejects with
 * `InvalidTokenError` (401) or `ServerApiError` (the server's message); a server that cannot be
 * reached with `ServerUnreachableError`, one that does not answer within `timeoutMs` with
 * `ServerTimeoutError`.
 */
export function openSshTunnel(target: SshTunnelTarget): Promise<Socket> {
  const base = new URL(target.serverUrl);
  const path = sshTunnelPath(target);
  const request = (base.protocol === 'https:' ? httpsRequest : httpRequest)({
    protocol: base.protocol,
    hostname: base.hostname.replace(/^\[(.*)\]$/, '$1'),
    port: base.port,
    // The server may sit under a path prefix (behind a reverse proxy).
    path: `${base.pathname.replace(/\/+$/, '')}${path}`,
    method: 'GET',
    headers: { authorization: `Bearer ${target.token}`, connection: 'Upgrade', upgrade: 'ssh' },
    ...(target.signal ? { signal: target.signal } : {}),
  });
  return new Promise<Socket>((resolve, reject) => {
    const { timeoutMs } = target;
    const timer =
      timeoutMs === undefined
        ? undefined
        : setTimeout(() => request.destroy(new ServerTimeoutError(target.serverUrl, timeoutMs)), timeoutMs);
    request.once('upgrade', (_response: IncomingMessage, socket: Socket, head: Buffer) => {
      clearTimeout(timer);
      if (head.length > 0) socket.unshift(head);
      resolve(socket);
    });
    request.once('response', (response: IncomingMessage) => {
      clearTimeout(timer);
      refusal(response, target, path).then(reject, reject);
    });
    request.on('error', (error) => {
      clearTimeout(timer);
      reject(isUnreachableError(error) ? new ServerUnreachableError(target.serverUrl, error) : error);
    });
    request.end();
  });
}
