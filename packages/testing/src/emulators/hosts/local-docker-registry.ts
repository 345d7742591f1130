/**
 * A Docker registry for tests: Debian's `docker-registry` (the CNCF distribution registry) over
 * TLS on 127.0.0.1, with htpasswd authentication (a private registry) or without (Docker Hub's
 * public images). Nothing can be pulled from the internet here, so the images jobs pull (the
 * default image of a mirror, a private image behind `registry_auth`) are pushed to it from local
 * images first: this machine's daemon pushes to 127.0.0.1 (Docker takes 127.0.0.0/8 as insecure
 * and skips the certificate check there). Emulated hosts, whose own Docker daemons pull, reach it
 * on their bridge's gateway, through a forwarded port, and trust its certificate as a real host
 * trusts Docker Hub's. One registry per test file: `stop()` ends the process, deletes its storage
 * and removes every image this machine's daemon holds from it.
 */
import { type ChildProcess, execFile, spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { request } from 'node:https';
import { createServer, type Server, type Socket, connect as tcpConnect } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { promisify } from 'node:util';
import { writeSelfSignedCertificate } from '../../emulator/self-signed-certificate.js';
import { bridgeGateway } from './agent-runtime-server.js';
import { compressedImage, pushCompressedImage } from './compressed-image-push.js';
import { runDocker } from './docker-cli.js';
import type { DockerEmulatedHosts } from './docker-emulated-hosts.js';
import { tarArchive } from './tar-archive.js';

const run = promisify(execFile);

/** The registry's binary and `htpasswd` (apache2-utils), as .ci/run installs them. */
const REGISTRY_BINARY = 'docker-registry';
const HTPASSWD_BINARY = 'htpasswd';

export interface LocalDockerRegistryOptions {
  /** Anyone may pull and push, as from Docker Hub's public repositories. Default: only the one user. */
  anonymous?: boolean;
  /** Serve these emulated hosts too: at `hostsAddress`, with a certificate they trust. */
  hosts?: DockerEmulatedHosts;
  /**
   * The hosts reach Docker Hub here (their daemons' mirror of it): what they pull by a Docker Hub
   * name (`dstackai/base:...`) comes from this registry. Default false.
   */
  dockerHub?: boolean;
}

export interface LocalDockerRegistry {
  /** `127.0.0.1:PORT`: the prefix of the images it serves to this machine. */
  address: string;
  /** `<gateway>:PORT` on the emulated hosts' bridge (the prefix of the images they pull), or null. */
  hostsAddress: string | null;
  /** The one user the registry lets in (anonymous registries let in anyone as well). */
  username: string;
  password: string;
  /**
   * Pushes local image `source` as `{address}/{name}` (e.g. `team/tool:v1`)
   * and removes that tag from the daemon, so a job has to pull it. `files` (path → content) are
   * added to the pushed image (their directories made as needed): a marker that proves a job ran
   * in it, pages to serve. Resolves with the full name.
   */
  push(source: string, name: string, files?: Record<string, string>): Promise<string>;
  /**
   * Pushes local image `source` as `{address}/{name}` from its layers gzipped once per machine
   * (compressed-image-push.ts), for a large image that `push` would compress again at every push.
   * Resolves with the full name.
   */
  pushCompressed(source: string, name: string): Promise<string>;
  /** Removes from the daemon every image tagged under `address` (what jobs pulled). */
  removePulledImages(): Promise<void>;
  /** Removes the pulled images, ends the registry and deletes its storage. */
  stop(): Promise<void>;
}

/**
 * Why the registry cannot run here (its binaries are missing), or null when it can; an anonymous
 * registry needs no htpasswd.
 */
export async function localDockerRegistryMissing(
  options: { anonymous?: boolean } = {},
): Promise<string | null> {
  for (const binary of options.anonymous ? [REGISTRY_BINARY] : [REGISTRY_BINARY, HTPASSWD_BINARY]) {
    try {
      await run('sh', ['-c', `command -v ${binary}`]);
    } catch {
      return `${binary} is not installed (apt-get install docker-registry apache2-utils)`;
    }
  }
  return null;
}

async function freeLoopbackPort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const address = server.address();
  await new Promise<void>((resolve) => server.close(() => resolve()));
  if (address === null || typeof address === 'string') throw new Error('no loopback port');
  return address.port;
}

interface RegistryFiles {
  storage: string;
  certificate: string;
  key: string;
  /** Absent for an anonymous registry. */
  htpasswd: string | null;
}

function registryConfig(port: number, files: RegistryFiles): string {
  return [
    'version: 0.1',
    'log:',
    '  level: warn',
    'storage:',
    '  filesystem:',
    `    rootdirectory: ${files.storage}`,
    '  delete:',
    '    enabled: true',
    'http:',
    `  addr: 127.0.0.1:${port}`,
    '  tls:',
    `    certificate: ${files.certificate}`,
    `    key: ${files.key}`,
    ...(files.htpasswd === null
      ? []
      : ['auth:', '  htpasswd:', '    realm: dstack-test', `    path: ${files.htpasswd}`]),
    '',
  ].join('\n');
}

/** The status `GET https://{address}/v2/` answers with (401 when the registry wants credentials). */
function registryStatus(address: string, ca: string): Promise<number> {
  const [host, port] = address.split(':');
  return new Promise((resolve, reject) => {
    const get = request({ host, port: Number(port), path: '/v2/', ca, timeout: 2_000 }, (response) => {
      response.resume();
      resolve(response.statusCode ?? 0);
    });
    get.once('timeout', () => get.destroy(new Error('timed out')));
    get.once('error', reject);
    get.end();
  });
}

/** Resolves once `/v2/` answers. */
async function waitUntilServing(
  address: string,
  ca: string,
  child: ChildProcess,
  output: () => string,
): Promise<void> {
  const deadline = Date.now() + 30_000;
  for (;;) {
    if (child.exitCode !== null)
      throw new Error(`docker-registry exited with ${child.exitCode}:\n${output()}`);
    try {
      const status = await registryStatus(address, ca);
      if (status === 401 || status === 200) return;
    } catch {
      // Not listening yet.
    }
    if (Date.now() > deadline) throw new Error(`docker-registry did not answer on ${address}:\n${output()}`);
    await sleep(100);
  }
}

/** Forwards connections to `host:0` (a port chosen there) to 127.0.0.1:`port`. */
async function forwardPort(host: string, port: number): Promise<{ address: string; close(): Promise<void> }> {
  const sockets = new Set<Socket>();
  const server: Server = createServer((incoming) => {
    const outgoing = tcpConnect({ host: '127.0.0.1', port });
    for (const socket of [incoming, outgoing]) {
      sockets.add(socket);
      socket.once('close', () => sockets.delete(socket));
      socket.on('error', () => {
        incoming.destroy();
        outgoing.destroy();
      });
    }
    incoming.pipe(outgoing).pipe(incoming);
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, host, resolve);
  });
  const bound = server.address();
  if (bound === null || typeof bound === 'string') throw new Error(`no port on ${host}`);
  return {
    address: `${host}:${bound.port}`,
    close: () =>
      new Promise<void>((resolve) => {
        for (const socket of sockets) socket.destroy();
        server.close(() => resolve());
      }),
  };
}

/**
 * Starts a registry on a free loopback port with one user (random credentials), and when
 * `options.hosts` is given, where those emulated hosts pull from.
 */
export async function startLocalDockerRegistry(
  options: LocalDockerRegistryOptions = {},
): Promise<LocalDockerRegistry> {
  const missing = await localDockerRegistryMissing(options);
  if (missing !== null) throw new Error(`cannot start a test registry: ${missing}`);
  const directory = await mkdtemp(join(tmpdir(), 'dstack-test-registry-'));
  const username = 'dstack-test';
  const password = randomBytes(12).toString('hex');
  let htpasswdPath: string | null = null;
  if (!options.anonymous) {
    htpasswdPath = join(directory, 'htpasswd');
    const { stdout: htpasswd } = await run(HTPASSWD_BINARY, ['-Bbn', username, password]);
    await writeFile(htpasswdPath, htpasswd);
  }
  let gateway: string | null = null;
  if (options.hosts) {
    await options.hosts.prepare();
    gateway = await bridgeGateway(options.hosts.network);
  }
  // Hosts trust the registry's certificate as its CA.
  const { certificate, key } = await writeSelfSignedCertificate(
    directory,
    'dstack-test-registry',
    gateway ? ['127.0.0.1', gateway] : ['127.0.0.1'],
  );
  const certificatePem = await readFile(certificate, 'utf8');
  const port = await freeLoopbackPort();
  const address = `127.0.0.1:${port}`;
  const configPath = join(directory, 'config.yml');
  await writeFile(
    configPath,
    registryConfig(port, { storage: join(directory, 'storage'), certificate, key, htpasswd: htpasswdPath }),
  );

  const child = spawn(REGISTRY_BINARY, ['serve', configPath], { stdio: ['ignore', 'pipe', 'pipe'] });
  let output = '';
  const collect = (chunk: Buffer) => {
    output = (output + chunk.toString()).slice(-8192);
  };
  child.stdout?.on('data', collect);
  child.stderr?.on('data', collect);
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  child.once('error', (error) => collect(Buffer.from(`${error.message}\n`)));
  let forwarded: Awaited<ReturnType<typeof forwardPort>> | null = null;
  try {
    await waitUntilServing(address, certificatePem, child, () => output);
    if (gateway !== null) forwarded = await forwardPort(gateway, port);
  } catch (error) {
    child.kill('SIGKILL');
    await rm(directory, { recursive: true, force: true });
    throw error;
  }
  if (forwarded !== null) {
    options.hosts?.trustRegistry(forwarded.address, certificatePem, { dockerHub: options.dockerHub });
  }

  // The docker CLI keeps its login in a config of its own: the user's ~/.docker stays untouched.
  const dockerEnv = { ...process.env, DOCKER_CONFIG: join(directory, 'docker-cli') };
  const docker = (args: string[]) => run('docker', args, { env: dockerEnv, timeout: 120_000 });
  let loggedIn = false;

  async function removePulledImages(): Promise<void> {
    const { stdout } = await docker(['image', 'ls', '--format', '{{.Repository}}:{{.Tag}}']);
    const ours = stdout.split('\n').filter((image) => image.startsWith(`${address}/`));
    if (ours.length > 0) await docker(['image', 'rm', '--force', ...ours]).catch(() => undefined);
  }

  return {
    address,
    hostsAddress: forwarded?.address ?? null,
    username,
    password,
    async push(source, name, files = {}) {
      if (!loggedIn && htpasswdPath !== null) {
        const login = spawn('docker', ['login', '--username', username, '--password-stdin', address], {
          env: dockerEnv,
          stdio: ['pipe', 'ignore', 'pipe'],
        });
        let loginError = '';
        login.stderr?.on('data', (chunk: Buffer) => {
          loginError += chunk.toString();
        });
        login.stdin?.end(password);
        const code = await new Promise<number | null>((resolve) => login.once('exit', resolve));
        if (code !== 0) throw new Error(`docker login ${address} failed: ${loginError}`);
        loggedIn = true;
      }
      const target = `${address}/${name}`;
      if (Object.keys(files).length === 0) {
        await docker(['tag', source, target]);
      } else {
        const { stdout } = await docker(['create', source, 'true']);
        const container = stdout.trim();
        try {
          // One archive from the root: Docker makes the directories a file's path needs.
          const archive = tarArchive(
            Object.entries(files).map(([path, content]) => ({
              path: path.replace(/^\/+/, ''),
              content: Buffer.from(content),
              mode: 0o644,
            })),
          );
          await runDocker(['cp', '-', `${container}:/`], { input: archive });
          await docker(['commit', container, target]);
        } finally {
          await docker(['rm', '--force', container]).catch(() => undefined);
        }
      }
      await docker(['push', target]);
      await docker(['image', 'rm', target]);
      return target;
    },
    async pushCompressed(source, name) {
      await pushCompressedImage(
        {
          address,
          ca: certificatePem,
          ...(htpasswdPath === null ? {} : { auth: { username, password } }),
        },
        await compressedImage(source),
        name,
      );
      return `${address}/${name}`;
    },
    removePulledImages,
    async stop() {
      await removePulledImages().catch(() => undefined);
      await forwarded?.close();
      if (child.exitCode === null) {
        child.kill('SIGTERM');
        await exited;
      }
      await rm(directory, { recursive: true, force: true });
    },
  };
}
