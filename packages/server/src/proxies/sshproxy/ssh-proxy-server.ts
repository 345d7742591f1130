/**
 * The built-in SSH proxy (dstack's `dstack-sshproxy`, served by the server itself): dstack's own
 * clients attach to a running job by logging in as the job's upstream id
 * (`job_connection_info.sshproxy_upstream_id`, the job's id in hex; dstack's client adds `_root`)
 * with the run's key (its `ssh_key_pub`, by default the user's own key). The proxy ends that SSH
 * connection and relays every channel over its own connection to the job's runner, reached as
 * every runner call is and logged in with the project key, which the runner authorizes for it.
 */
import { chmod, mkdir, readFile, writeFile } from 'node:fs/promises';
import { hostname as machineName } from 'node:os';
import { dirname, join } from 'node:path';
import { generateEd25519KeyPair } from '@dstack/core';
import { type AuthorizedKey, findAuthorizedKey, parseAuthorizedKeys } from '@dstack/runner';
import ssh2, { type AuthContext, type Client, type Connection } from 'ssh2';
import { projectOf } from '../../accounts/projects.js';
import { userPublicKeyLines } from '../../accounts/user-public-keys.js';
import { projectKeyOf } from '../../agents/agent-clients.js';
import type { AppContext, SshProxyAddress } from '../../context.js';
import { runSpecOf } from '../../db/json-columns.js';
import type { JobsTable } from '../../db/schema.js';
import { relayDirectTcpip, relaySession } from './channel-relay.js';
import { openRunnerSshSocket } from './runner-ssh-socket.js';

/** The host key's file in the server directory; made at the first start. */
export const SSH_PROXY_HOST_KEY_FILE = 'sshproxy_host_key';

/** A login name: the job's id in hex, then optionally `_` and anything (dstack's client sends `_root`). */
const UPSTREAM_LOGIN = /^([0-9a-f]{32})(?:_.*)?$/;

export interface RunningSshProxy {
  /** Where clients are told to connect. */
  address: SshProxyAddress;
  /** The port it listens on. */
  port: number;
  close(): Promise<void>;
}

async function hostKeyOf(serverDir: string): Promise<string> {
  const path = join(serverDir, SSH_PROXY_HOST_KEY_FILE);
  try {
    return await readFile(path, 'utf8');
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'ENOENT') throw error;
  }
  await mkdir(dirname(path), { recursive: true });
  const { privateKey } = generateEd25519KeyPair('dstack-sshproxy');
  await writeFile(path, privateKey, { mode: 0o600, flag: 'wx' }).catch(
    async (error: NodeJS.ErrnoException) => {
      // Another process made it first: use theirs.
      if (error.code !== 'EEXIST') throw error;
    },
  );
  await chmod(path, 0o600);
  return readFile(path, 'utf8');
}

/** `host[:port]` of `DSTACK_SERVER_SSHPROXY_ADDRESS`, else where the proxy listens. */
export function advertisedAddress(
  listenHost: string,
  port: number,
  configured: string | null | undefined,
): SshProxyAddress {
  if (configured) {
    const match = /^(\[[^\]]+\]|[^:]+)(?::(\d+))?$/.exec(configured);
    if (!match) throw new Error(`DSTACK_SERVER_SSHPROXY_ADDRESS must be host[:port], got "${configured}"`);
    return { hostname: match[1]!.replace(/^\[(.*)\]$/, '$1'), port: match[2] ? Number(match[2]) : port };
  }
  const wildcard = listenHost === '0.0.0.0' || listenHost === '::' || listenHost === '';
  return { hostname: wildcard ? machineName() : listenHost, port };
}

/** The job a login names, while it runs; null for any other name. */
async function runningJobOf(app: AppContext, username: string): Promise<JobsTable | null> {
  const hex = UPSTREAM_LOGIN.exec(username)?.[1];
  if (!hex) return null;
  const id = `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}`;
  const job = await app.db.selectFrom('jobs').selectAll().where('id', '=', id).executeTakeFirst();
  return job?.status === 'running' ? job : null;
}

/** The keys that may log in to the job: its run's `ssh_key_pub`, its user's own key and the keys the user added (dstack's). */
async function authorizedKeysOf(app: AppContext, job: JobsTable): Promise<AuthorizedKey[]> {
  const run = await app.db
    .selectFrom('runs')
    .selectAll()
    .where('id', '=', job.run_id)
    .executeTakeFirstOrThrow();
  const user = await app.db
    .selectFrom('users')
    .select('ssh_public_key')
    .where('id', '=', run.user_id)
    .executeTakeFirst();
  const lines = [
    runSpecOf(run).ssh_key_pub ?? '',
    user?.ssh_public_key ?? '',
    ...(await userPublicKeyLines(app, run.user_id)),
  ];
  return lines.flatMap((text) => {
    try {
      return parseAuthorizedKeys(text, 'ssh_key_pub');
    } catch {
      // A key this proxy cannot read lets no one in; the others still do.
      return [];
    }
  });
}

/** Serves one client: authenticates it against the job's keys, then relays its channels. */
function serveConnection(app: AppContext, connection: Connection, closing: AbortSignal): void {
  let job: JobsTable | null = null;
  let upstream: Promise<Client> | undefined;
  connection.on('error', () => undefined);
  connection.on('authentication', (context: AuthContext) => {
    authenticate(app, context, (found) => {
      job = found;
    }).catch(() => context.reject(['publickey']));
  });
  connection.on('ready', () => {
    const target = job as JobsTable;
    const controller = new AbortController();
    const abort = () => controller.abort();
    closing.addEventListener('abort', abort, { once: true });
    upstream = connectToRunner(app, target, controller.signal);
    // A runner that cannot be reached ends the client's connection: every channel would fail.
    upstream.then(
      (client) => {
        client.once('close', () => connection.end());
        connection.once('close', () => client.end());
      },
      () => connection.end(),
    );
    connection.once('close', () => {
      closing.removeEventListener('abort', abort);
      controller.abort();
    });
    connection.on('session', (accept) => relaySession(accept(), upstream as Promise<Client>));
    connection.on('tcpip', (accept, reject, info) =>
      relayDirectTcpip(accept, reject, info, upstream as Promise<Client>),
    );
    // Remote forwards (`ssh -R`) would listen on the job's side: not offered.
    connection.on('request', (_accept, reject) => reject?.());
  });
}

/** Accepts the login when it names a running job and proves one of its keys, telling `accepted` the job first. */
async function authenticate(
  app: AppContext,
  context: AuthContext,
  accepted: (job: JobsTable) => void,
): Promise<void> {
  if (context.method !== 'publickey') {
    context.reject(['publickey']);
    return;
  }
  const job = await runningJobOf(app, context.username);
  const key = job
    ? findAuthorizedKey(await authorizedKeysOf(app, job), context.key.algo, context.key.data)
    : undefined;
  if (!job || key === undefined) {
    context.reject(['publickey']);
    return;
  }
  // Without a signature the client only asks whether the key would do; with one, it proves it holds the private half.
  if (
    context.signature === undefined ||
    context.blob === undefined ||
    key.key.verify(context.blob, context.signature, context.hashAlgo) === true
  ) {
    accepted(job);
    context.accept();
    return;
  }
  context.reject(['publickey']);
}

/** The proxy's own SSH connection to the job's runner, logged in with the project key. */
async function connectToRunner(app: AppContext, job: JobsTable, signal: AbortSignal): Promise<Client> {
  const project = await projectOf(app, job.project_id);
  const socket = await openRunnerSshSocket(app, project, job, signal);
  const client = new ssh2.Client();
  return new Promise<Client>((resolve, reject) => {
    client.once('ready', () => resolve(client));
    client.once('error', reject);
    signal.addEventListener('abort', () => client.end(), { once: true });
    // The runner's SSH server takes any login name and runs sessions as the job's user.
    client.connect({ sock: socket, username: 'root', privateKey: projectKeyOf(app, project) });
  });
}

/** Starts the SSH proxy on `host:port` (0: a free port). */
export async function startSshProxy(
  app: AppContext,
  options: { host: string; port: number; advertisedAddress?: string | null },
): Promise<RunningSshProxy> {
  const hostKey = await hostKeyOf(app.settings.serverDir);
  const closing = new AbortController();
  const connections = new Set<Connection>();
  const server = new ssh2.Server({ hostKeys: [hostKey] }, (connection) => {
    connections.add(connection);
    connection.once('close', () => connections.delete(connection));
    serveConnection(app, connection, closing.signal);
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(options.port, options.host, () => {
      server.off('error', reject);
      resolve();
    });
  });
  const port = (server.address() as { port: number }).port;
  return {
    address: advertisedAddress(options.host, port, options.advertisedAddress),
    port,
    async close() {
      closing.abort();
      for (const connection of connections) connection.end();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
