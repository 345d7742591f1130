import { execFileSync } from 'node:child_process';
import {
  lstatSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  rmSync,
  statSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { RunnerClient } from '../client/runner-client.js';
import { craftTar, directory, file, hardLink } from '../testing/crafted-tar.test.helpers.js';
import {
  decodeLogs,
  processExists,
  pullUntil,
  submitBody,
  waitFor,
} from '../testing/runner-job.test.helpers.js';
import { type RunnerOptions, type RunnerServer, startRunner } from './runner-server.js';

// `nobody` exists in Debian's /etc/passwd (and in the shim's test image): uid and gid 65534.
const NOBODY = 65534;
const runsAsRoot = process.getuid?.() === 0;
if (!runsAsRoot)
  console.warn('skipping the job user tests: switching users needs a test process running as root');

describe.skipIf(!runsAsRoot)('a job with a user, run by a root runner', () => {
  let homeDir: string;
  const runners: RunnerServer[] = [];

  beforeEach(() => {
    // mkdtemp makes the home 0700: the runner must open it for the job's user itself.
    homeDir = mkdtempSync(join(tmpdir(), 'dstack-runner-user-'));
  });

  afterEach(async () => {
    for (const runner of runners.splice(0)) await runner.close();
    rmSync(homeDir, { recursive: true, force: true });
  });

  async function clientFor(options: Partial<RunnerOptions> = {}): Promise<RunnerClient> {
    const runner = await startRunner({ port: 0, homeDir, ...options });
    runners.push(runner);
    return new RunnerClient(runner.url);
  }

  it('runs the commands as the user, with its HOME and USER, in a working dir it owns', async () => {
    const client = await clientFor();
    const source = mkdtempSync(join(tmpdir(), 'dstack-runner-user-code-'));
    try {
      mkdirSync(join(source, 'src'));
      writeFileSync(join(source, 'src', 'notes.txt'), 'from the repo\n');
      const archive = execFileSync('tar', ['-cf', '-', '-C', source, '.']);
      await client.submit(
        submitBody(
          [
            'echo "uid=$(id -u) gid=$(id -g)"',
            'echo "home=$HOME user=$USER logname=$LOGNAME"',
            'echo appended-by-the-job >> notes.txt',
            'echo created > created.txt',
            'test -r "$DSTACK_MPI_HOSTFILE" && echo hostfile-readable',
          ],
          { user: String(NOBODY), working_dir: 'src', env: { FROM_SPEC: '1' } },
        ),
      );
      await client.uploadCode(new Uint8Array(archive));
      const started = await client.run();
      expect(started.username).toBe('nobody');
      const job = await pullUntil(client);
      expect(job.states.at(-1)).toMatchObject({ state: 'done', exit_status: 0 });
      expect(decodeLogs(job.jobLogs).split('\n')).toEqual([
        `uid=${NOBODY} gid=${NOBODY}`,
        // nobody's passwd home is /nonexistent, which dstack replaces with /.
        'home=/ user=nobody logname=nobody',
        'hostfile-readable',
        '',
      ]);
      const workingDir = join(homeDir, 'workflow', 'src');
      expect(readFileSync(join(workingDir, 'notes.txt'), 'utf8')).toBe(
        'from the repo\nappended-by-the-job\n',
      );
      expect(statSync(join(workingDir, 'created.txt')).uid).toBe(NOBODY);
      expect(statSync(join(homeDir, 'workflow')).uid).toBe(NOBODY);
      // The runner's home stays the runner's: the job may only pass through it.
      expect(statSync(homeDir).uid).toBe(0);
      expect(statSync(homeDir).mode & 0o777).toBe(0o711);
    } finally {
      rmSync(source, { recursive: true, force: true });
    }
  });

  /**
   * Runs `body` with busybox as the `tar` on PATH (the runner's too), as in a busybox image: its
   * tar makes an entry hard-linked to `/etc/passwd` a second name of it (GNU tar strips the `/`).
   * `passwd` is the file outside that the archive aims at.
   */
  async function withBusyboxTar(body: (passwd: string) => Promise<void>): Promise<void> {
    const imageTools = mkdtempSync(join(tmpdir(), 'dstack-runner-busybox-'));
    const outside = mkdtempSync(join(tmpdir(), 'dstack-runner-outside-'));
    const passwd = join(outside, 'passwd');
    writeFileSync(passwd, 'root:x:0:0:root:/root:/bin/sh\n', { mode: 0o644 });
    symlinkSync('/usr/bin/busybox', join(imageTools, 'tar'));
    const path = process.env.PATH;
    process.env.PATH = `${imageTools}:${path}`;
    try {
      await body(passwd);
    } finally {
      process.env.PATH = path;
      rmSync(imageTools, { recursive: true, force: true });
      rmSync(outside, { recursive: true, force: true });
    }
  }

  function expectUntouched(passwd: string): void {
    expect(readFileSync(passwd, 'utf8')).toBe('root:x:0:0:root:/root:/bin/sh\n');
    expect(lstatSync(passwd)).toMatchObject({ uid: 0, gid: 0, nlink: 1, mode: 0o100644 });
  }

  it('refuses a code archive entry hard-linked to a file outside, and hands nothing outside over', () =>
    withBusyboxTar(async (passwd) => {
      const client = await clientFor();
      await client.submit(
        submitBody(['echo should-not-run'], {
          user: String(NOBODY),
          repo_data: { repo_type: 'local', repo_dir: '/src' },
          repo_dir: 'code',
          repo_exists_action: 'error',
        }),
      );
      await client.uploadCode(
        craftTar([file('README.md', '# repo\n'), hardLink('pw', passwd)], { gzip: true }),
      );
      await client.run();
      const job = await pullUntil(client);
      expectUntouched(passwd);
      expect(job.jobLogs).toEqual([]);
      expect(job.states.at(-1)).toMatchObject({
        state: 'failed',
        termination_reason: 'executor_error',
        termination_message: `tar archive entry "pw" refused: hard link to ${passwd}: the target is absolute`,
      });
    }));

  it('refuses a file archive entry hard-linked out of its destination with ..', () =>
    withBusyboxTar(async (passwd) => {
      const client = await clientFor();
      await client.submit(
        submitBody(['echo should-not-run'], {
          user: String(NOBODY),
          file_archives: [{ id: 'archive-1', path: 'inputs/data' }],
        }),
      );
      const climbing = `../../../../../..${passwd}`;
      await client.uploadArchive('archive-1', craftTar([directory('data/'), hardLink('data/pw', climbing)]));
      await client.run();
      const job = await pullUntil(client);
      expectUntouched(passwd);
      expect(job.states.at(-1)).toMatchObject({
        state: 'failed',
        termination_reason: 'executor_error',
        termination_message: `tar archive entry "data/pw" refused: hard link to ${climbing}: the target climbs out with ..`,
      });
    }));

  it("uses the runner's default user when the spec names none, and the spec's user over it", async () => {
    const client = await clientFor({ defaultJobUser: `${NOBODY}:${NOBODY}` });
    await client.submit(submitBody(['id -u']));
    await client.run();
    expect(decodeLogs((await pullUntil(client)).jobLogs)).toBe(`${NOBODY}\n`);

    await runners.splice(0)[0]?.close();
    const overridden = await clientFor({ defaultJobUser: String(NOBODY) });
    await overridden.submit(submitBody(['id -u'], { user: 'root' }));
    expect((await overridden.run()).username).toBe('root');
    expect(decodeLogs((await pullUntil(overridden)).jobLogs)).toBe('0\n');
  });

  it('runs a uid unknown to /etc/passwd with gid 0 and HOME=/, as Docker does', async () => {
    // The root runner's own login names must not reach a job that runs as someone else.
    const client = await clientFor({ env: { ...process.env, HOME: '/root', USER: 'root', LOGNAME: 'root' } });
    await client.submit(
      submitBody(['echo "$(id -u):$(id -g) home=$HOME user=$USER logname=$LOGNAME"'], { user: '4242' }),
    );
    expect((await client.run()).username).toBe('4242');
    const job = await pullUntil(client);
    expect(decodeLogs(job.jobLogs)).toBe('4242:0 home=/ user= logname=\n');
  });

  it('fails the job with a message naming user when the user does not exist', async () => {
    const client = await clientFor();
    await client.submit(submitBody(['echo should-not-run'], { user: 'dstack-no-such-user' }));
    await client.run();
    const job = await pullUntil(client);
    expect(job.jobLogs).toEqual([]);
    expect(job.states.at(-1)).toMatchObject({
      state: 'failed',
      termination_reason: 'executor_error',
      termination_message: 'user "dstack-no-such-user": no user named "dstack-no-such-user" in /etc/passwd',
    });
  });
});

describe.skipIf(!runsAsRoot)('a job whose user has supplementary groups, run by a root runner', () => {
  // A user of a group file of the test's own: the job's process must carry the groups listing it.
  const MEMBER = { name: 'dstack-member', uid: 4243 };
  const EXTRA_GROUPS = [4244, 4245];
  let homeDir: string;
  let databaseDir: string;
  let runner: RunnerServer | undefined;

  beforeEach(() => {
    homeDir = mkdtempSync(join(tmpdir(), 'dstack-runner-groups-'));
    databaseDir = mkdtempSync(join(tmpdir(), 'dstack-runner-groups-db-'));
    writeFileSync(join(databaseDir, 'passwd'), `${MEMBER.name}:x:${MEMBER.uid}:${MEMBER.uid}::/:/bin/sh\n`);
    writeFileSync(
      join(databaseDir, 'group'),
      [
        `${MEMBER.name}:x:${MEMBER.uid}:`,
        `dstack-extra:x:${EXTRA_GROUPS[0]}:someone-else,${MEMBER.name}`,
        `dstack-other:x:${EXTRA_GROUPS[1]}:${MEMBER.name}`,
        'dstack-unrelated:x:4246:someone-else',
        '',
      ].join('\n'),
    );
  });

  afterEach(async () => {
    await runner?.close();
    runner = undefined;
    rmSync(homeDir, { recursive: true, force: true });
    rmSync(databaseDir, { recursive: true, force: true });
  });

  async function runAsMember(commands: string[], stopDuration?: number): Promise<RunnerClient> {
    runner = await startRunner({
      port: 0,
      homeDir,
      userDatabase: { passwd: join(databaseDir, 'passwd'), group: join(databaseDir, 'group') },
    });
    const client = new RunnerClient(runner.url);
    await client.submit(submitBody(commands, { user: MEMBER.name, stop_duration: stopDuration }));
    await client.run();
    return client;
  }

  /** The job's process group id, from the line `pgid=N` the job printed. */
  function printedGroupId(logs: string): number {
    const match = /pgid=(\d+)/.exec(logs);
    if (match?.[1] === undefined) throw new Error(`no pgid in ${JSON.stringify(logs)}`);
    return Number(match[1]);
  }

  const PRINT_GROUP_ID = "echo pgid=$(cut -d' ' -f5 /proc/$$/stat)";

  it("runs the commands with the user's supplementary groups, as `id -G` shows them", async () => {
    const client = await runAsMember(['id -u', 'id -G']);
    const job = await pullUntil(client);
    expect(job.states.at(-1)).toMatchObject({ state: 'done', exit_status: 0 });
    expect(decodeLogs(job.jobLogs)).toBe(`${MEMBER.uid}\n${[MEMBER.uid, ...EXTRA_GROUPS].join(' ')}\n`);
    expect(decodeLogs(job.runnerLogs)).toContain(
      `as ${MEMBER.name} (uid ${MEMBER.uid}, gid ${MEMBER.uid}, groups ${[MEMBER.uid, ...EXTRA_GROUPS].join(',')})`,
    );
  });

  it.each([
    ['an exit status', 'exit 3', { state: 'failed', exit_status: 3, termination_message: 'exit status 3' }],
    // SIGUSR1 would start node's inspector: the signal must be the shell's, not replayed by node.
    [
      'a signal',
      'kill -USR1 $$',
      { state: 'failed', exit_status: null, termination_message: 'signal SIGUSR1' },
    ],
  ])('reports %s of the shell exactly', async (_, command, expected) => {
    const client = await runAsMember(['echo before', command]);
    const job = await pullUntil(client);
    expect(job.states.at(-1)).toMatchObject({
      ...expected,
      termination_reason: 'container_exited_with_error',
    });
    expect(decodeLogs(job.jobLogs)).toBe('before\n');
  });

  it('stops a job that honours SIGTERM without waiting for the kill', async () => {
    // A minute of grace: the test times out long before if only SIGKILL ends the job.
    const client = await runAsMember([PRINT_GROUP_ID, 'sleep 60'], 60);
    const running = await pullUntil(client, (job) => decodeLogs(job.jobLogs).includes('pgid='));
    const groupId = printedGroupId(decodeLogs(running.jobLogs));
    await client.stop();
    const job = await pullUntil(client, undefined, running, running.states.at(-1)!.timestamp);
    expect(job.states.at(-1)).toMatchObject({
      state: 'terminated',
      termination_reason: 'terminated_by_user',
    });
    expect(decodeLogs(job.runnerLogs)).toContain('job exited with signal SIGTERM');
    await waitFor(() => !processExists(-groupId), 10_000, 'the job process group to exit');
  });

  it('kills a job that ignores SIGTERM once stop_duration has passed', async () => {
    const client = await runAsMember([`trap '' TERM; ${PRINT_GROUP_ID}; sleep 60`], 1);
    const running = await pullUntil(client, (job) => decodeLogs(job.jobLogs).includes('pgid='));
    const groupId = printedGroupId(decodeLogs(running.jobLogs));
    await client.stop();
    const job = await pullUntil(client, undefined, running, running.states.at(-1)!.timestamp);
    expect(job.states.at(-1)).toMatchObject({
      state: 'terminated',
      termination_reason: 'terminated_by_user',
      exit_status: null,
    });
    expect(decodeLogs(job.runnerLogs)).toContain('job exited with signal SIGKILL');
    await waitFor(() => !processExists(-groupId), 10_000, 'the job process group to exit');
  });
});
