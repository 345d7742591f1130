import { execFileSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { RunnerClient } from '../client/runner-client.js';
import { decodeLogs, pullUntil, submitBody } from '../testing/runner-job.test.helpers.js';
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
