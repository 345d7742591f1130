/**
 * dstack's CLI attaching to a task that ends at once (`dstack apply -f task.yml`, attached, on
 * the local backend): it looks at the run at its own pace (`_get_ready_wait_interval`: every 1 s,
 * after five looks every 5 s), attaches only to a job it sees running (`Run.attach`, `_find_job`)
 * and reads the job's output from the runner through the SSH proxy. On dstack's server a job is
 * running at least 10 s; here the attach window keeps an ended job shown running that long, for
 * runs submitted by dstack's client (it sends `X-API-VERSION`; this project's CLI does not, and
 * its runs end at once).
 */
import type { Run } from '@dstack/core';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { attachLikeDstack } from './dstack-attach.js';
import {
  ADMIN_TOKEN,
  type HarnessServer,
  localBackendConfig,
  makeTempDir,
  startHarnessServer,
} from './server-harness.js';

vi.setConfig({ testTimeout: 120_000, hookTimeout: 120_000 });

/** dstack 0.21.2's `_get_ready_wait_interval` (cli/services/configurators/run.py), in ms. */
const readyWaitIntervalMs = (attempt: number) => (attempt < 5 ? 1_000 : 5_000);

/** dstack's `_is_ready_to_attach`: the run is past provisioning, and so is its first job. */
function readyToAttach(run: Run): boolean {
  const job = run.jobs[0]?.job_submissions.at(-1)?.status;
  return (
    !['submitted', 'pending', 'provisioning', 'terminating'].includes(run.status) &&
    !['submitted', 'provisioning', 'pulling'].includes(job ?? '')
  );
}

describe("dstack's CLI attaching to a task that ends at once", () => {
  const temp = makeTempDir('dstack-attach-window-');
  let harness: HarnessServer;

  beforeAll(async () => {
    harness = await startHarnessServer({
      dir: temp.dir,
      config: localBackendConfig(temp.dir),
      env: { DSTACK_SERVER_ATTACH_WINDOW_SECONDS: '10' },
    });
  });
  afterAll(async () => {
    await harness?.terminateFleetsAndClose();
    temp.remove();
  });

  it('sees the job running, attaches through the SSH proxy and reads its whole output', async () => {
    // Applied as dstack's client applies: with its API version header.
    const applied = await fetch(`${harness.server.url}/api/project/main/runs/apply`, {
      method: 'POST',
      headers: {
        authorization: `Bearer ${ADMIN_TOKEN}`,
        'content-type': 'application/json',
        'x-api-version': '0.21.2',
      },
      body: JSON.stringify({
        plan: {
          run_spec: {
            configuration: { type: 'task', name: 'quick-echo', commands: ['echo hello from a quick task'] },
          },
        },
      }),
    });
    expect(applied.status).toBe(200);
    let run = (await applied.json()) as Run;
    // dstack's `apply` loop: look, wait its interval, look again, until ready to attach.
    for (let attempt = 0; !readyToAttach(run); attempt++) {
      await new Promise((resolve) => setTimeout(resolve, readyWaitIntervalMs(attempt)));
      run = (await harness.call<Run>('/api/project/main/runs/get', { run_name: 'quick-echo' })).body;
    }
    // `Run.attach` finds the job only while its latest submission is running (else "Failed to
    // find replica"), and then needs the SSH proxy (else `assert ssh_port is not None`).
    expect(run.jobs[0]?.job_submissions.at(-1)?.status).toBe('running');
    const info = run.jobs[0]?.job_connection_info;
    if (!info?.sshproxy_hostname || !info.sshproxy_port || !info.sshproxy_upstream_id) {
      throw new Error(`the running job has no sshproxy connection info: ${JSON.stringify(info)}`);
    }
    const me = (await harness.call<{ ssh_private_key: string }>('/api/users/get_my_user', {})).body;
    const attached = await attachLikeDstack(
      {
        hostname: info.sshproxy_hostname,
        port: info.sshproxy_port,
        upstreamId: info.sshproxy_upstream_id,
        privateKey: me.ssh_private_key,
      },
      'true',
    );
    expect(attached.logText).toBe('hello from a quick task\n');
    // Then the run ends as it did, its output stored once.
    const ended = await harness.waitForRun('quick-echo', ['done', 'failed', 'terminated'], 60_000);
    expect(ended.status).toBe('done');
    expect(await harness.logs('quick-echo')).toBe('hello from a quick task\n');
  });
});
