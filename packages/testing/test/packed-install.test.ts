/**
 * The optional-peer composition as users get it: the packed tarballs of the
 * server, the CLI and one backend (plus what they depend on) are installed
 * with npm in a directory outside the workspace, with no other backend
 * package, and the installed `dstack` runs a task to `done`: with
 * @dstack/backend-local on this machine, with @dstack/backend-aws on the EC2
 * emulator and with @dstack/backend-gcp on the Compute Engine emulator (their
 * instances Docker hosts that install the packed shim). A
 * configured backend whose package is missing must name the package to install.
 */
import { type ChildProcess, execFile, execFileSync, spawn } from 'node:child_process';
import {
  createReadStream,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  writeFileSync,
} from 'node:fs';
import { createServer } from 'node:http';
import { createRequire } from 'node:module';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it, type TestContext } from 'vitest';
import { findUnbuiltPackages } from '../../../scripts/lib/release-check.mjs';
import { packPackageDirectory } from '../src/emulators/hosts/served-file.js';
import {
  awsEmulatorServerConfig,
  DockerEmulatedHosts,
  gcpEmulatorServerConfig,
  serveAgentRuntime,
  serveDefaultImages,
  startAwsEmulator,
  startGcpEmulator,
} from '../src/emulators/index.js';

const root = resolve(dirname(fileURLToPath(import.meta.url)), '../../..');
/**
 * The server and the CLI, and what they depend on in the workspace (the agent runtime is the
 * server's optional dependency, which it copies to SSH fleet hosts; web is the console's build).
 */
const SERVER_AND_CLI = [
  'core',
  'catalog',
  'runner',
  'shim',
  'runner-runtime-linux-x64',
  'web',
  'server',
  'cli',
];
/** What a user installs for the embedded default. */
const WITH_LOCAL = [...SERVER_AND_CLI, 'backend-local'];
const INSTALL_TIMEOUT_MS = 15 * 60_000;
const SERVER_START_TIMEOUT_MS = 60_000;

interface CommandResult {
  code: number | null;
  output: string;
}

/** Runs a command to its end, collecting stdout and stderr together. */
function runCommand(
  command: string,
  args: string[],
  options: { cwd: string; env: NodeJS.ProcessEnv; timeoutMs: number },
): Promise<CommandResult> {
  return new Promise((resolveRun) => {
    execFile(
      command,
      args,
      { cwd: options.cwd, env: options.env, timeout: options.timeoutMs, maxBuffer: 64 * 1024 * 1024 },
      (error, stdout, stderr) => {
        const code = error ? (typeof error.code === 'number' ? error.code : null) : 0;
        resolveRun({ code, output: `${stdout}${stderr}` });
      },
    );
  });
}

async function dockerAnswers(): Promise<boolean> {
  const result = await runCommand('docker', ['info'], { cwd: tmpdir(), env: process.env, timeoutMs: 20_000 });
  return result.code === 0;
}

// CI provides Docker (.ci/run); elsewhere the AWS case says why it skips.
const dockerMissing = !(await dockerAnswers()) && process.env.CI !== 'true';

/** npm's registry answers (`npm ping`), within 30 seconds. */
async function isRegistryReachable(env: NodeJS.ProcessEnv): Promise<boolean> {
  const result = await runCommand('npm', ['ping'], { cwd: tmpdir(), env, timeoutMs: 30_000 });
  return result.code === 0;
}

/**
 * better-sqlite3's prebuilt binary, as its GitHub release serves it (unreachable here), from a
 * mirror on loopback: a tarball of the workspace's own compiled `better_sqlite3.node`, which is
 * the same version (pinned in the catalog) for the same Node ABI. Users get the prebuilt binary;
 * compiling it from source would cost the test a minute or more. Any other path answers 404, and
 * prebuild-install then falls back to compiling, as it does for a user whose platform has none.
 */
interface PrebuiltMirror {
  url: string;
  /** The request paths that were answered with the binary. */
  served: string[];
  close(): Promise<void>;
}

async function servePrebuiltBetterSqlite3(workDir: string): Promise<PrebuiltMirror> {
  const packageDir = dirname(
    createRequire(join(root, 'packages/server/package.json')).resolve('better-sqlite3/package.json'),
  );
  const { version } = JSON.parse(readFileSync(join(packageDir, 'package.json'), 'utf8')) as {
    version: string;
  };
  const tarball = join(workDir, 'better-sqlite3-prebuilt.tar.gz');
  execFileSync('tar', ['-czf', tarball, '-C', packageDir, 'build/Release/better_sqlite3.node']);
  // prebuild-install's name for it under a mirror: <host>/v<version>/<name>-v<version>-node-v<abi>-<platform>-<arch>.tar.gz
  const path = `/v${version}/better-sqlite3-v${version}-node-v${process.versions.modules}-${process.platform}-${process.arch}.tar.gz`;
  const served: string[] = [];
  const server = createServer((request, response) => {
    if (request.url !== path) {
      response.writeHead(404).end();
      return;
    }
    served.push(request.url);
    response.writeHead(200, { 'content-type': 'application/gzip' });
    createReadStream(tarball).pipe(response);
  });
  await new Promise<void>((listening) => server.listen(0, '127.0.0.1', listening));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    served,
    close: () => new Promise((closed) => server.close(() => closed())),
  };
}

/**
 * The environment for npm: no pnpm-injected `npm_config_*` (they would leak
 * the workspace's settings), better-sqlite3's prebuilt binary from the mirror,
 * and node-gyp pointed at the running node's headers when it has them, so a
 * fallback compile downloads none.
 */
function npmEnvironment(prebuiltMirrorUrl: string): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = {};
  for (const [key, value] of Object.entries(process.env)) {
    if (/^npm_(config|package|lifecycle)_/i.test(key) && key.toLowerCase() !== 'npm_config_registry')
      continue;
    env[key] = value;
  }
  env.npm_config_better_sqlite3_binary_host = prebuiltMirrorUrl;
  env.npm_config_audit = 'false';
  env.npm_config_fund = 'false';
  env.npm_config_update_notifier = 'false';
  // npm's cache answers for what it holds (`--prefer-offline`), the registry for the rest: the
  // three installs would otherwise ask again for the metadata of every package they share.
  env.npm_config_prefer_offline = 'true';
  const nodePrefix = dirname(dirname(process.execPath));
  if (existsSync(join(nodePrefix, 'include', 'node', 'node_api.h'))) env.npm_config_nodedir = nodePrefix;
  return env;
}

/** The installed `dstack`'s environment: its own server and CLI directories, no inherited DSTACK_*. */
function dstackEnvironment(home: string): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = {};
  for (const [key, value] of Object.entries(process.env)) {
    if (!key.startsWith('DSTACK_') && !/^npm_/i.test(key)) env[key] = value;
  }
  env.DSTACK_SERVER_DIR = join(home, 'server');
  env.DSTACK_CLI_CONFIG_DIR = join(home, 'cli');
  env.NO_COLOR = '1';
  return env;
}

interface StartedServer {
  process: ChildProcess;
  url: string;
  token: string;
}

/** Starts `dstack server --port 0`; resolves when it prints its URL and admin token, rejects when it exits. */
function startServer(dstack: string, cwd: string, env: NodeJS.ProcessEnv): Promise<StartedServer> {
  const child = spawn(dstack, ['server', '--port', '0'], {
    cwd,
    env,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  return new Promise((resolveStart, rejectStart) => {
    let output = '';
    const timer = setTimeout(() => {
      child.kill('SIGTERM');
      rejectStart(new Error(`dstack server did not start within ${SERVER_START_TIMEOUT_MS} ms:\n${output}`));
    }, SERVER_START_TIMEOUT_MS);
    const onData = (chunk: Buffer) => {
      output += chunk.toString();
      const token = /The admin token is (\S+)/.exec(output)?.[1];
      const url = /The server is running at (\S+)/.exec(output)?.[1];
      if (url && token) {
        clearTimeout(timer);
        resolveStart({ process: child, url, token });
      }
    };
    child.stdout.on('data', onData);
    child.stderr.on('data', onData);
    child.once('exit', (code) => {
      clearTimeout(timer);
      rejectStart(new Error(`dstack server exited with ${code}:\n${output}`));
    });
  });
}

async function stopServer(server: StartedServer): Promise<void> {
  if (server.process.exitCode !== null || server.process.signalCode !== null) return;
  const exited = new Promise((resolveExit) => server.process.once('exit', resolveExit));
  server.process.kill('SIGTERM');
  await exited;
}

/** Polls the fleets API until the project has none: the local instances' shims are gone. */
async function waitForNoFleets(server: StartedServer, timeoutMs: number): Promise<boolean> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    const response = await fetch(`${server.url}/api/project/main/fleets/list`, {
      method: 'POST',
      headers: { authorization: `Bearer ${server.token}`, 'content-type': 'application/json' },
      body: '{}',
    });
    if (((await response.json()) as unknown[]).length === 0) return true;
    await new Promise((resolveWait) => setTimeout(resolveWait, 250));
  }
  return false;
}

describe('packed install of the server, the CLI and one backend', () => {
  let workDir = '';
  let appDir = '';
  const servers: StartedServer[] = [];
  let registryReachable: Promise<boolean> | undefined;
  let prebuiltMirror: PrebuiltMirror;

  beforeAll(async () => {
    workDir = mkdtempSync(join(tmpdir(), 'dstack-packed-install-'));
    appDir = join(workDir, 'app');
    mkdirSync(appDir);
    writeFileSync(
      join(appDir, 'package.json'),
      `${JSON.stringify({ name: 'packed-install', version: '0.0.0', private: true }, null, 2)}\n`,
    );
    prebuiltMirror = await servePrebuiltBetterSqlite3(workDir);
  });

  // Removing the installed node_modules can take longer than a hook's default 10 s on a busy machine.
  afterAll(async () => {
    for (const server of servers) await stopServer(server);
    await prebuiltMirror?.close();
    if (workDir) rmSync(workDir, { recursive: true, force: true });
  }, 120_000);

  /** The package in `packages/{name}` packed as a release packs it (kept for the machine: the agent runtime is over 100 MB). */
  async function tarballOf(name: string): Promise<string> {
    return (await packPackageDirectory(join(root, 'packages', name))).path;
  }

  /**
   * Installs exactly `names` (packed tarballs) in the app directory with npm and resolves with the
   * installed `dstack` bin. The tests share the directory: a later install removes the packages
   * the earlier one had and this one lacks, and keeps the third-party ones they share as they
   * are (better-sqlite3 is compiled once), as npm does for any user who changes what they install.
   */
  async function installOnly(names: readonly string[], context: TestContext): Promise<string> {
    const npmEnv = npmEnvironment(prebuiltMirror.url);
    registryReachable ??= isRegistryReachable(npmEnv);
    if (!(await registryReachable)) {
      context.skip(
        'the npm registry is unreachable (npm ping failed): cannot install third-party dependencies',
      );
    }
    const unbuilt = findUnbuiltPackages(root);
    expect(unbuilt, 'packages without dist/: run pnpm build first').toEqual([]);
    const install = await runCommand(
      'npm',
      ['install', '--no-save', ...(await Promise.all(names.map(tarballOf)))],
      {
        cwd: appDir,
        env: npmEnv,
        timeoutMs: INSTALL_TIMEOUT_MS - 120_000,
      },
    );
    expect(install.code, `npm install failed:\n${install.output}`).toBe(0);
    expect(readdirSync(join(appDir, 'node_modules', '@dstack')).sort()).toEqual([...names].sort());
    expect(existsSync(join(appDir, 'node_modules/better-sqlite3/build/Release/better_sqlite3.node'))).toBe(
      true,
    );
    // Its prebuilt binary came from the mirror (the first install fetched it; later ones keep it).
    expect(prebuiltMirror.served.length, install.output).toBe(1);
    // The bin npm linked for the CLI package: proves its `bin` entry and shebang work once installed.
    return join(appDir, 'node_modules', '.bin', 'dstack');
  }

  it(
    'installs from the registry and runs a task to done with only @dstack/backend-local',
    async (context) => {
      const dstack = await installOnly(WITH_LOCAL, context);
      const home = join(workDir, 'home-local');
      const env = dstackEnvironment(home);
      const task = join(workDir, 'packed.dstack.yml');
      writeFileSync(
        task,
        [
          'type: task',
          'name: packed-hello',
          'commands:',
          '  - echo "packed install says $((6 * 7))"',
          'resources:',
          '  cpu: 1..',
          '  memory: 0.5GB..',
          '',
        ].join('\n'),
      );

      const server = await startServer(dstack, appDir, env);
      servers.push(server);
      let fleetsGone = false;
      try {
        const apply = await runCommand(dstack, ['apply', '-f', task, '-y'], {
          cwd: appDir,
          env,
          timeoutMs: 5 * 60_000,
        });
        expect(apply.output).toContain('packed install says 42');
        expect(apply.output).toContain('Run packed-hello done');
        expect(apply.code, apply.output).toBe(0);
      } finally {
        await runCommand(dstack, ['fleet', 'delete', 'local', '-y'], {
          cwd: appDir,
          env,
          timeoutMs: 60_000,
        });
        // No assertion here: it would hide why apply failed. The instances' shims must be gone either way.
        fleetsGone = await waitForNoFleets(server, 60_000);
        await stopServer(server);
      }
      expect(fleetsGone, 'the local fleet was not deleted').toBe(true);

      // The same install with `aws` configured: its package is absent, and the server says which to install.
      writeFileSync(
        join(home, 'server', 'config.yml'),
        [
          'projects:',
          '  - name: main',
          '    backends:',
          '      - type: local',
          '      - type: aws',
          '        creds:',
          '          type: default',
          '',
        ].join('\n'),
      );
      const failedStart = await runCommand(dstack, ['server', '--port', '0'], {
        cwd: appDir,
        env,
        timeoutMs: 60_000,
      });
      expect(failedStart.code).not.toBe(0);
      expect(failedStart.output).toMatch(/config\.yml:\d+:\d+/);
      expect(failedStart.output).toContain('install @dstack/backend-aws');
    },
    INSTALL_TIMEOUT_MS,
  );

  /** A cloud emulator whose hosts are Docker containers, as the packed-install cases use it. */
  interface EmulatedCloud {
    readonly serverConfig: string;
    launchedMachineCount(): number;
    /** Whether every machine it launched is terminated (or gone). */
    allTerminated(): boolean;
    close(): Promise<void>;
  }

  /**
   * Installs only `backend` (with the server and the CLI), points the server at the cloud
   * `startCloud` emulates, runs a T4 task to done, deletes its fleet and checks that the one
   * machine it launched is terminated.
   */
  async function runGpuTaskOnEmulatedCloud(
    context: TestContext,
    options: {
      backend: string;
      name: string;
      startCloud: (hosts: DockerEmulatedHosts) => Promise<EmulatedCloud>;
    },
  ): Promise<void> {
    const dstack = await installOnly([...SERVER_AND_CLI, options.backend], context);
    const home = join(workDir, `home-${options.name}`);
    mkdirSync(join(home, 'server'), { recursive: true });
    const hosts = new DockerEmulatedHosts({ emulator: `${options.name}-packed` });
    // The hosts install the very agent runtime tarball of the release the server came with.
    const shim = await serveAgentRuntime(hosts, { tarball: await tarballOf('runner-runtime-linux-x64') });
    // The task runs in dstack's default image, which the hosts' Docker pulls from a mirror.
    const defaultImages = await serveDefaultImages(hosts);
    const cloud = await options.startCloud(hosts);
    const runName = `packed-${options.name}`;
    let fleetsGone = false;
    try {
      writeFileSync(join(home, 'server', 'config.yml'), cloud.serverConfig);
      const env = {
        ...dstackEnvironment(home),
        DSTACK_SHIM_DOWNLOAD_URL: shim.url,
        DSTACK_DOCKER_BASE_IMAGE: defaultImages.baseImage,
      };
      const task = join(workDir, `${runName}.dstack.yml`);
      writeFileSync(
        task,
        [
          'type: task',
          `name: ${runName}`,
          'commands:',
          `  - echo "packed install on ${options.name} says $((6 * 7))"`,
          'resources:',
          '  gpu: T4',
          '',
        ].join('\n'),
      );
      const server = await startServer(dstack, appDir, env);
      servers.push(server);
      try {
        const apply = await runCommand(dstack, ['apply', '-f', task, '-y'], {
          cwd: appDir,
          env,
          timeoutMs: 5 * 60_000,
        });
        expect(apply.output).toContain(`packed install on ${options.name} says 42`);
        expect(apply.output).toContain(`Run ${runName} done`);
        expect(apply.code, apply.output).toBe(0);
        expect(cloud.launchedMachineCount()).toBe(1);
      } finally {
        await runCommand(dstack, ['fleet', 'delete', runName, '-y'], {
          cwd: appDir,
          env,
          timeoutMs: 60_000,
        });
        fleetsGone = await waitForNoFleets(server, 120_000);
        await stopServer(server);
      }
      expect(fleetsGone, `the fleet ${runName} was not deleted`).toBe(true);
      // Deleting the fleet terminates its instance; the cloud takes a moment to report it.
      for (let poll = 0; poll < 600 && !cloud.allTerminated(); poll++) {
        await new Promise((resolveWait) => setTimeout(resolveWait, 100));
      }
      expect(cloud.allTerminated()).toBe(true);
    } finally {
      await cloud.close();
      await hosts.close();
      await shim.close();
      await defaultImages.stop();
    }
  }

  it.skipIf(dockerMissing)(
    'installs only @dstack/backend-aws and runs a GPU task on the EC2 emulator to done',
    (context) =>
      runGpuTaskOnEmulatedCloud(context, {
        backend: 'backend-aws',
        name: 'aws',
        startCloud: async (hosts) => {
          const emulator = await startAwsEmulator({ hosts, regions: ['us-east-1'] });
          return {
            serverConfig: awsEmulatorServerConfig(emulator),
            launchedMachineCount: () => emulator.launchedMachineCount(),
            allTerminated: () =>
              emulator.state().instances.every((instance) => instance.state === 'terminated'),
            close: () => emulator.close(),
          };
        },
      }),
    INSTALL_TIMEOUT_MS,
  );

  it.skipIf(dockerMissing)(
    'installs only @dstack/backend-gcp and runs a GPU task on the Compute Engine emulator to done',
    (context) =>
      runGpuTaskOnEmulatedCloud(context, {
        backend: 'backend-gcp',
        name: 'gcp',
        startCloud: async (hosts) => {
          const emulator = await startGcpEmulator({ hosts, regions: ['us-central1'] });
          return {
            serverConfig: gcpEmulatorServerConfig(emulator),
            launchedMachineCount: () => emulator.launchedMachineCount(),
            // A deleted instance leaves the API once it is terminated.
            allTerminated: () =>
              emulator.state().instances.every((instance) => instance.state === 'TERMINATED'),
            close: () => emulator.close(),
          };
        },
      }),
    INSTALL_TIMEOUT_MS,
  );
});
