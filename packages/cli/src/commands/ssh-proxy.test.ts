import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { CLI_TEST_TIMEOUT_MS, CliHarness, waitFor } from '../__fixtures__/cli-harness.js';
import { FakeDstackServer, HttpAnswer } from '../__fixtures__/fake-dstack-server.js';

let harness: CliHarness;
let server: FakeDstackServer | undefined;

beforeEach(() => {
  harness = new CliHarness();
});

afterEach(async () => {
  harness.cleanUp();
  const problems = server?.problems ?? [];
  await server?.close();
  server = undefined;
  expect(problems).toEqual([]);
});

describe('dstack ssh-proxy (built bin, fake server)', { timeout: CLI_TEST_TIMEOUT_MS }, () => {
  it("joins stdin and stdout to the job's tunnel and exits when stdin ends", async () => {
    server = await FakeDstackServer.start({ upgrade: () => (socket) => socket.pipe(socket) });
    await harness.useProject(server.url, server.token);
    const cli = harness.start(['ssh-proxy', 'my-run', '--job', '1', '--replica', '2'], {}, { stdin: 'pipe' });
    cli.child.stdin?.write('SSH-2.0-OpenSSH_9.6\r\n');
    await waitFor(() => cli.stdout().includes('SSH-2.0-OpenSSH_9.6\r\n'), 'the echo');
    cli.child.stdin?.end('last bytes');
    const result = await cli.result;
    expect(result).toMatchObject({ code: 0, stdout: 'SSH-2.0-OpenSSH_9.6\r\nlast bytes', stderr: '' });
    expect(server.upgrades).toEqual([
      {
        path: '/proxy/ssh/main/my-run',
        query: { job_num: '1', replica_num: '2' },
        authorization: `Bearer ${server.token}`,
      },
    ]);
  });

  it('uses the project named with --project, and job 0 of replica 0 by default', async () => {
    server = await FakeDstackServer.start({ upgrade: () => (socket) => socket.end() });
    await harness.useProject(server.url, server.token, 'team');
    const result = await harness.run(['ssh-proxy', '--project', 'team', 'my-run']);
    expect(result.code).toBe(0);
    expect(server.upgrades[0]).toMatchObject({
      path: '/proxy/ssh/team/my-run',
      query: { job_num: '0', replica_num: '0' },
    });
  });

  it.each([
    [404, 'run my-run not found'],
    [409, 'run my-run is finished'],
    [503, 'job my-run-0-0 is not running yet'],
  ])("prints the server's message and exits 1 when it answers %i", async (status, message) => {
    server = await FakeDstackServer.start({
      upgrade: () => new HttpAnswer(status, { detail: [{ msg: message, code: 'error' }] }),
    });
    await harness.useProject(server.url, server.token);
    const result = await harness.run(['ssh-proxy', 'my-run']);
    expect(result).toMatchObject({ code: 1, stdout: '', stderr: `error: ${message}\n` });
  });

  it('says how to fix a rejected token', async () => {
    server = await FakeDstackServer.start({ upgrade: () => (socket) => socket.end() });
    await harness.useProject(server.url, 'wrong-token');
    const result = await harness.run(['ssh-proxy', 'my-run']);
    expect(result.code).toBe(1);
    expect(result.stderr).toContain('error: invalid token for project main');
  });

  it('rejects a job number that is not one', async () => {
    await harness.useProject('http://127.0.0.1:9', 'token');
    const result = await harness.run(['ssh-proxy', 'my-run', '--job', 'x']);
    expect(result).toMatchObject({ code: 1, stderr: "error: --job: expected a number >= 0, got 'x'\n" });
  });
});
