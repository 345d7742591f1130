/**
 * A private Docker registry on loopback for tests: Debian's `docker-registry` (the CNCF
 * distribution registry) with htpasswd authentication, serving plain HTTP on 127.0.0.1 (Docker
 * allows insecure registries on 127.0.0.0/8 by default). Nothing can be pulled from the internet
 * here, so the images jobs pull (the default image of a mirror, a private image behind
 * `registry_auth`) are pushed to it from local images first. One registry per test file: `stop()`
 * ends the process, deletes its storage and removes every image the daemon holds from it.
 */
import { type ChildProcess, execFile, spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { promisify } from 'node:util';

const run = promisify(execFile);

/** The registry's binary and `htpasswd` (apache2-utils), as .ci/run installs them. */
const REGISTRY_BINARY = 'docker-registry';
const HTPASSWD_BINARY = 'htpasswd';

export interface LocalDockerRegistry {
  /** `127.0.0.1:PORT`: the prefix of the images it serves. */
  address: string;
  /** The one user the registry lets in. */
  username: string;
  password: string;
  /**
   * Pushes local image `source` as `{address}/{name}` (e.g. `dstackai/base:py3.11-0.10-cuda-12.1`)
   * and removes that tag from the daemon, so a job has to pull it. `files` (path → content) are
   * added to the pushed image: a marker that proves a job ran in it. Resolves with the full name.
   */
  push(source: string, name: string, files?: Record<string, string>): Promise<string>;
  /** Removes from the daemon every image tagged under `address` (what jobs pulled). */
  removePulledImages(): Promise<void>;
  /** Removes the pulled images, ends the registry and deletes its storage. */
  stop(): Promise<void>;
}

/** Why the registry cannot run here (its binaries are missing), or null when it can. */
export async function localDockerRegistryMissing(): Promise<string | null> {
  for (const binary of [REGISTRY_BINARY, HTPASSWD_BINARY]) {
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

function registryConfig(port: number, storage: string, htpasswdPath: string): string {
  return [
    'version: 0.1',
    'log:',
    '  level: warn',
    'storage:',
    '  filesystem:',
    `    rootdirectory: ${storage}`,
    '  delete:',
    '    enabled: true',
    'http:',
    `  addr: 127.0.0.1:${port}`,
    'auth:',
    '  htpasswd:',
    '    realm: dstack-test',
    `    path: ${htpasswdPath}`,
    '',
  ].join('\n');
}

/** Resolves once `/v2/` answers (401 without credentials: the registry checks them). */
async function waitUntilServing(address: string, child: ChildProcess, output: () => string): Promise<void> {
  const deadline = Date.now() + 30_000;
  for (;;) {
    if (child.exitCode !== null)
      throw new Error(`docker-registry exited with ${child.exitCode}:\n${output()}`);
    try {
      const response = await fetch(`http://${address}/v2/`);
      if (response.status === 401 || response.ok) return;
    } catch {
      // Not listening yet.
    }
    if (Date.now() > deadline) throw new Error(`docker-registry did not answer on ${address}:\n${output()}`);
    await sleep(100);
  }
}

/** Starts a registry on a free loopback port with one user (random credentials). */
export async function startLocalDockerRegistry(): Promise<LocalDockerRegistry> {
  const directory = await mkdtemp(join(tmpdir(), 'dstack-test-registry-'));
  const username = 'dstack-test';
  const password = randomBytes(12).toString('hex');
  const htpasswdPath = join(directory, 'htpasswd');
  const { stdout: htpasswd } = await run(HTPASSWD_BINARY, ['-Bbn', username, password]);
  await writeFile(htpasswdPath, htpasswd);
  const port = await freeLoopbackPort();
  const address = `127.0.0.1:${port}`;
  const configPath = join(directory, 'config.yml');
  await writeFile(configPath, registryConfig(port, join(directory, 'storage'), htpasswdPath));

  const child = spawn(REGISTRY_BINARY, ['serve', configPath], { stdio: ['ignore', 'pipe', 'pipe'] });
  let output = '';
  const collect = (chunk: Buffer) => {
    output = (output + chunk.toString()).slice(-8192);
  };
  child.stdout?.on('data', collect);
  child.stderr?.on('data', collect);
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  try {
    await waitUntilServing(address, child, () => output);
  } catch (error) {
    child.kill('SIGKILL');
    await rm(directory, { recursive: true, force: true });
    throw error;
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
    username,
    password,
    async push(source, name, files = {}) {
      if (!loggedIn) {
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
          for (const [path, content] of Object.entries(files)) {
            const local = join(directory, `file-${randomBytes(4).toString('hex')}`);
            await writeFile(local, content);
            await docker(['cp', local, `${container}:${path}`]);
          }
          await docker(['commit', container, target]);
        } finally {
          await docker(['rm', '--force', container]).catch(() => undefined);
        }
      }
      await docker(['push', target]);
      await docker(['image', 'rm', target]);
      return target;
    },
    removePulledImages,
    async stop() {
      await removePulledImages().catch(() => undefined);
      if (child.exitCode === null) {
        child.kill('SIGTERM');
        await exited;
      }
      await rm(directory, { recursive: true, force: true });
    },
  };
}
