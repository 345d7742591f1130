import { createHook } from 'node:async_hooks';
import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { RunnerSubmitBody } from '@dstack/core/agent-protocol';
import type { Client } from 'ssh2';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { AgentApiError } from '../client/agent-api-error.js';
import { RunnerClient } from '../client/runner-client.js';
import { type RunnerOptions, type RunnerServer, startRunner } from '../server/runner-server.js';
import { submitBody } from '../testing/runner-job.test.helpers.js';
import {
  connectSsh,
  generateClientKey,
  openSshUpgrade,
  runOverSsh,
  UpgradeRefusedError,
} from '../testing/ssh.test.helpers.js';

const runsAsRoot = process.getuid?.() === 0;
// `nobody` exists in Debian's /etc/passwd: uid 65534. A root runner switches to it, as for the job.
const NOBODY = 65534;
const KEEP_RUNNING = 'sleep 600';
const authorizedKey = generateClientKey('authorized');

let homeDir: string;
let runner: RunnerServer | undefined;
let runnerClient: RunnerClient;
const sshClients: Client[] = [];

beforeEach(() => {
  homeDir = mkdtempSync(join(tmpdir(), 'dstack-runner-ssh-'));
});

afterEach(async () => {
  for (const client of sshClients.splice(0)) client.end();
  await runner?.close();
  runner = undefined;
  rmSync(homeDir, { recursive: true, force: true });
});

async function startRunnerForTest(options: Partial<RunnerOptions> = {}): Promise<RunnerServer> {
  runner = await startRunner({ port: 0, homeDir, ...options });
  runnerClient = new RunnerClient(runner.url);
  return runner;
}

/** A runner running a job that lasts, with `ssh_key_pub` authorized unless overridden. */
async function startJob(
  jobSpec: Partial<RunnerSubmitBody['job_spec']> = {},
  sshKeyPub: string | null = authorizedKey.publicLine,
  options: Partial<RunnerOptions> = {},
) {
  await startRunnerForTest(options);
  const body = submitBody([KEEP_RUNNING], { env: { FROM_JOB: 'job-env' }, ...jobSpec });
  body.run.run_spec = { ssh_key_pub: sshKeyPub };
  await runnerClient.submit(body);
  return runnerClient.run();
}

function runnerUrl(): string {
  if (runner === undefined) throw new Error('start the runner first');
  return runner.url;
}

async function login(privateKey = authorizedKey.privateKey): Promise<Client> {
  const client = await connectSsh(runnerUrl(), privateKey);
  sshClients.push(client);
  return client;
}

describe('GET /api/ssh', () => {
  it('answers 409 before a job was submitted', async () => {
    await startRunnerForTest();
    const refused = await openSshUpgrade(runnerUrl()).catch((error: unknown) => error);
    expect(refused).toBeInstanceOf(UpgradeRefusedError);
    expect(refused).toMatchObject({ statusCode: 409 });
    expect(JSON.parse((refused as UpgradeRefusedError).body)).toEqual({
      detail: 'no job was submitted to this runner',
    });
  });

  it('answers 400 for another protocol', async () => {
    await startJob();
    const refused = await openSshUpgrade(runnerUrl(), 'websocket').catch((error: unknown) => error);
    expect(refused).toMatchObject({ statusCode: 400 });
    expect((refused as UpgradeRefusedError).body).toContain(
      'header upgrade: expected \\"ssh\\", got \\"websocket\\"',
    );
  });

  it('refuses a submit whose ssh_key_pub is not a public key line, naming the field', async () => {
    await startRunnerForTest();
    const body = submitBody([KEEP_RUNNING]);
    body.run.run_spec = { ssh_key_pub: `${authorizedKey.publicLine}\nnot-a-key` };
    const refused = await runnerClient.submit(body).catch((error: unknown) => error);
    expect(refused).toBeInstanceOf(AgentApiError);
    expect(refused).toMatchObject({ statusCode: 400 });
    expect((refused as AgentApiError).body).toContain('run.run_spec.ssh_key_pub line 2');
  });
});

describe('the host key', () => {
  it('is generated on the first SSH connection, not when the runner starts or runs its job', async () => {
    // A key generation is thread-pool work: a shim starting hundreds of runners would queue every
    // runner's file work (its job's start) behind their keys.
    let keyGenerations = 0;
    const hook = createHook({
      init(_id, type) {
        if (type === 'KEYPAIRGENREQUEST') keyGenerations += 1;
      },
    }).enable();
    try {
      await startJob();
      expect(keyGenerations).toBe(0);
      const result = await runOverSsh(await login(), 'echo in');
      expect(result).toMatchObject({ stdout: 'in\n', code: 0 });
      expect(keyGenerations).toBeGreaterThan(0);
    } finally {
      hook.disable();
    }
  });
});

describe('SSH into a running job', () => {
  it("runs a command as the job's user, in its working directory, with its environment", async () => {
    const jobUser = runsAsRoot ? { user: String(NOBODY) } : {};
    const started = await startJob({ working_dir: 'src', ...jobUser });
    const client = await login();
    const result = await runOverSsh(client, 'echo $DSTACK_RUN_NAME $FROM_JOB; pwd; id -u');
    expect(result).toMatchObject({ stderr: '', code: 0 });
    const uid = runsAsRoot ? NOBODY : process.getuid?.();
    expect(result.stdout).toBe(`test-run job-env\n${started.working_dir}\n${uid}\n`);
  });

  it('runs a shell without a terminal that reads its commands from stdin', async () => {
    await startJob();
    const client = await login();
    const result = await runOverSsh(client, undefined, {
      stdin: 'echo from-stdin\necho to-stderr >&2\nexit 4\n',
    });
    expect(result).toEqual({ stdout: 'from-stdin\n', stderr: 'to-stderr\n', code: 4, signal: undefined });
  });

  it('reports exit statuses and signals', async () => {
    await startJob();
    const client = await login();
    expect(await runOverSsh(client, 'exit 3')).toMatchObject({ code: 3 });
    expect(await runOverSsh(client, 'kill -TERM $$')).toMatchObject({ code: undefined, signal: 'SIGTERM' });
  });

  it.skipIf(!existsSync('/usr/bin/script'))(
    'gives a command a terminal under script when asked',
    async () => {
      await startJob();
      const client = await login();
      const result = await runOverSsh(client, 'test -t 0 && stty size && echo $TERM; exit 5', { pty: true });
      expect(result.stdout.replace(/\r/g, '')).toBe('30 100\nxterm\n');
      expect(result.code).toBe(5);
    },
  );

  it('connects direct-tcpip channels to ports reachable from the runner', async () => {
    await startJob();
    const web = await startHttpServer('hello from the job');
    try {
      const client = await login();
      const answer = await new Promise<string>((resolve, reject) => {
        client.forwardOut('127.0.0.1', 0, '127.0.0.1', web.port, (error, channel) => {
          if (error) {
            reject(error);
            return;
          }
          let text = '';
          channel.on('data', (chunk: Buffer) => {
            text += chunk.toString();
          });
          channel.once('close', () => resolve(text));
          channel.write('GET / HTTP/1.1\r\nHost: job\r\nConnection: close\r\n\r\n');
        });
      });
      expect(answer).toMatch(/^HTTP\/1\.1 200 OK\r\n/);
      expect(answer.endsWith('hello from the job')).toBe(true);
    } finally {
      await new Promise((resolve) => web.server.close(resolve));
    }
  });

  it('refuses a key that is not authorized', async () => {
    await startJob();
    const refused = await login(generateClientKey('stranger').privateKey).catch((error: unknown) => error);
    expect(refused).toMatchObject({ level: 'client-authentication' });
  });

  it('refuses every login when the job authorizes no key', async () => {
    await startJob({}, null);
    const refused = await login().catch((error: unknown) => error);
    expect(refused).toMatchObject({ level: 'client-authentication' });
  });

  it('authorizes the keys of ssh_authorized_keys too', async () => {
    await startRunnerForTest();
    const other = generateClientKey('other');
    await runnerClient.submit(submitBody([KEEP_RUNNING], {}, { ssh_authorized_keys: [other.publicLine] }));
    await runnerClient.run();
    const client = await login(other.privateKey);
    expect(await runOverSsh(client, 'echo ok')).toMatchObject({ stdout: 'ok\n', code: 0 });
  });

  it('ends open connections when the runner closes', async () => {
    await startJob();
    const client = await login();
    const closed = new Promise<void>((resolve) => client.once('close', () => resolve()));
    await runner?.close();
    await closed;
  });
});

describe.skipIf(!runsAsRoot)('SSH into a job whose user has supplementary groups', () => {
  const MEMBER = { name: 'dstack-ssh-member', uid: 4253, extraGroup: 4254 };
  let databaseDir: string;

  beforeEach(() => {
    databaseDir = mkdtempSync(join(tmpdir(), 'dstack-runner-ssh-db-'));
    writeFileSync(join(databaseDir, 'passwd'), `${MEMBER.name}:x:${MEMBER.uid}:${MEMBER.uid}::/:/bin/sh\n`);
    writeFileSync(
      join(databaseDir, 'group'),
      `${MEMBER.name}:x:${MEMBER.uid}:\ndstack-ssh-extra:x:${MEMBER.extraGroup}:${MEMBER.name}\n`,
    );
  });

  afterEach(() => {
    rmSync(databaseDir, { recursive: true, force: true });
  });

  it('runs a shell with the groups, through the same wrapper as the job, reading stdin', async () => {
    await startJob({ user: MEMBER.name }, authorizedKey.publicLine, {
      userDatabase: { passwd: join(databaseDir, 'passwd'), group: join(databaseDir, 'group') },
    });
    const client = await login();
    const result = await runOverSsh(client, undefined, { stdin: 'id -u; id -G\nexit 6\n' });
    expect(result).toMatchObject({
      stdout: `${MEMBER.uid}\n${MEMBER.uid} ${MEMBER.extraGroup}\n`,
      code: 6,
    });
  });
});

async function startHttpServer(body: string): Promise<{ server: Server; port: number }> {
  const server = createServer((_request, response) => response.end(body));
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { server, port: (server.address() as AddressInfo).port };
}
