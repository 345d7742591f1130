/**
 * `no_connections_secs` in `GET /api/pull`: seconds without an SSH connection, counted from when
 * the job started running and again from when the last connection closed; 0 while one is open.
 * The clock is faked (Date only): real SSH traffic, no waiting on the wall clock.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Client } from 'ssh2';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { RunnerClient } from '../client/runner-client.js';
import { type RunnerServer, startRunner } from '../server/runner-server.js';
import { submitBody } from '../testing/runner-job.test.helpers.js';
import { connectSsh, generateClientKey, runOverSsh } from '../testing/ssh.test.helpers.js';
import { SshConnectionActivity } from './ssh-connection-activity.js';

const authorizedKey = generateClientKey('authorized');

let homeDir: string;
let runner: RunnerServer | undefined;

beforeEach(() => {
  vi.useFakeTimers({ toFake: ['Date'], now: Date.UTC(2026, 0, 1) });
  homeDir = mkdtempSync(join(tmpdir(), 'dstack-runner-ssh-activity-'));
});

afterEach(async () => {
  await runner?.close();
  runner = undefined;
  vi.useRealTimers();
  rmSync(homeDir, { recursive: true, force: true });
});

function advanceSeconds(seconds: number): void {
  vi.setSystemTime(Date.now() + seconds * 1000);
}

async function noConnectionsSecs(client: RunnerClient): Promise<number | null | undefined> {
  return (await client.pull(0)).no_connections_secs;
}

describe('no_connections_secs in GET /api/pull', () => {
  it('grows from the job start, is 0 while connected and counts again from the disconnect', async () => {
    runner = await startRunner({ port: 0, homeDir });
    const runnerClient = new RunnerClient(runner.url);
    const body = submitBody(['sleep 600']);
    body.run.run_spec = { ssh_key_pub: authorizedKey.publicLine };
    await runnerClient.submit(body);

    // Submitted but not running: nothing to be inactive yet.
    advanceSeconds(50);
    expect(await noConnectionsSecs(runnerClient)).toBe(0);

    await runnerClient.run();
    advanceSeconds(30);
    expect(await noConnectionsSecs(runnerClient)).toBe(30);

    const ssh: Client = await connectSsh(runner.url, authorizedKey.privateKey);
    // A command's answer means the runner has the connection as logged in.
    expect((await runOverSsh(ssh, 'true')).code).toBe(0);
    advanceSeconds(100);
    expect(await noConnectionsSecs(runnerClient)).toBe(0);

    const clientClosed = new Promise<void>((resolve) => ssh.once('close', () => resolve()));
    ssh.end();
    await clientClosed;
    // The runner sees the close in its own time; move the clock a second per look until it has.
    let afterClose = 0;
    let looks = 0;
    while (afterClose === 0) {
      looks++;
      advanceSeconds(1);
      afterClose = (await noConnectionsSecs(runnerClient)) ?? 0;
    }
    // Counted from the disconnect, not from the start (130 seconds before it).
    expect(afterClose).toBeLessThanOrEqual(looks);
    advanceSeconds(60);
    expect(await noConnectionsSecs(runnerClient)).toBe(afterClose + 60);
  });
});

describe('SshConnectionActivity', () => {
  it('stays at 0 until the last of overlapping connections closes', () => {
    const activity = new SshConnectionActivity();
    activity.start();
    const closeFirst = activity.opened();
    const closeSecond = activity.opened();
    advanceSeconds(10);
    closeFirst();
    closeFirst();
    advanceSeconds(10);
    expect(activity.noConnectionsSecs()).toBe(0);
    closeSecond();
    advanceSeconds(7);
    expect(activity.noConnectionsSecs()).toBe(7);
  });

  it('counts from the start when a connection closed before the job ran', () => {
    const activity = new SshConnectionActivity();
    activity.opened()();
    advanceSeconds(20);
    expect(activity.noConnectionsSecs()).toBe(0);
    activity.start();
    advanceSeconds(5);
    expect(activity.noConnectionsSecs()).toBe(5);
  });
});
