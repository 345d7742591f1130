import { describe, expect, it } from 'vitest';
import { needsGroupWrapper, spawnDroppingPrivileges } from './drop-privileges.js';

const runsAsRoot = process.getuid?.() === 0;
if (!runsAsRoot)
  console.warn(
    'skipping the privilege-dropping wrapper tests: switching users needs a test process running as root',
  );

const MEMBER = { uid: 4243, gid: 4243, groups: [4243, 4244, 4245] };

/** Runs `script` through the wrapper; resolves with its output, its report and its own exit. */
async function runWrapped(script: string, options: { env?: Record<string, string>; groups?: number[] } = {}) {
  const { child, stdout, stderr, report } = spawnDroppingPrivileges({
    command: '/bin/sh',
    args: ['-c', script],
    cwd: '/',
    env: options.env ?? { PATH: '/usr/bin:/bin' },
    identity: { ...MEMBER, groups: options.groups ?? MEMBER.groups },
  });
  let output = '';
  stdout.on('data', (chunk: Buffer) => {
    output += chunk.toString();
  });
  stderr.on('data', (chunk: Buffer) => {
    output += chunk.toString();
  });
  const [ownExit] = await Promise.all([
    new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) =>
      child.once('close', (code, signal) => resolve({ code, signal })),
    ),
    report,
  ]);
  return { output, report: await report, ownExit, groupId: child.pid };
}

describe('needsGroupWrapper', () => {
  it('is needed only for groups besides the primary one, which node keeps by itself', () => {
    expect(needsGroupWrapper({ uid: 1, gid: 5, groups: [5] })).toBe(false);
    expect(needsGroupWrapper({ uid: 1, gid: 5, groups: [5, 27] })).toBe(true);
  });
});

describe.skipIf(!runsAsRoot)('spawnDroppingPrivileges', () => {
  it('runs the command with the uid, gid and groups, in the wrapper’s process group', async () => {
    const { output, report, groupId } = await runWrapped("id -u; id -g; id -G; cut -d' ' -f5 /proc/$$/stat");
    expect(report).toEqual({ kind: 'exited', code: 0, signal: null });
    expect(output).toBe(`4243\n4243\n4243 4244 4245\n${groupId}\n`);
  });

  it.each([
    ['exit 0', { code: 0, signal: null }],
    ['exit 3', { code: 3, signal: null }],
    ['kill -TERM $$', { code: null, signal: 'SIGTERM' }],
    ['kill -USR1 $$', { code: null, signal: 'SIGUSR1' }],
  ])('reports `%s` exactly', async (script, expected) => {
    expect((await runWrapped(script)).report).toEqual({ kind: 'exited', ...expected });
  });

  it("gives the job's environment to the command only, and no channel to the runner", async () => {
    // In the wrapper's own environment this would stop node from starting.
    const env = { PATH: '/usr/bin:/bin', NODE_OPTIONS: '--require /nonexistent/dstack-module.js' };
    // The wrapper's channel is its descriptor 3: an inherited one would keep that number.
    const { output, report } = await runWrapped(
      'echo "$NODE_OPTIONS"; echo "channel=$NODE_CHANNEL_FD"; test -e /proc/$$/fd/3 && echo fd3-open || echo fd3-closed',
      { env },
    );
    expect(report).toEqual({ kind: 'exited', code: 0, signal: null });
    expect(output).toBe(`${env.NODE_OPTIONS}\nchannel=\nfd3-closed\n`);
  });

  it('reports a command that cannot start', async () => {
    const { child, report } = spawnDroppingPrivileges({
      command: '/nonexistent/dstack-shell',
      args: [],
      cwd: '/',
      env: {},
      identity: MEMBER,
    });
    child.stdout?.resume();
    child.stderr?.resume();
    expect(await report).toEqual({ kind: 'spawn-failed', message: 'spawn /nonexistent/dstack-shell ENOENT' });
  });

  it('reports groups it cannot switch to, naming the ids', async () => {
    // More groups than the kernel's NGROUPS_MAX (65536): setgroups refuses them.
    const groups = Array.from({ length: 65_537 }, (_, index) => 10_000 + index);
    const { report } = await runWrapped('echo should-not-run', { groups });
    expect(report).toMatchObject({
      kind: 'spawn-failed',
      message: expect.stringMatching(/^cannot switch to uid 4243 \(gid 4243, groups 10000,10001,.*\): /),
    });
  });
});
