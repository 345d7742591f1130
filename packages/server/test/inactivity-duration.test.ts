/**
 * `inactivity_duration` end to end on the local backend: a dev environment nobody connects to
 * is stopped by the server once its real runner reports no SSH connection for that long.
 */
import { afterAll, beforeAll, expect, it, vi } from 'vitest';
import { generateProjectSshKeyPair } from '../src/agents/ssh-keys.js';
import {
  describeEachDatabase,
  type HarnessServer,
  HOST_RESOURCES,
  localBackendConfig,
  makeTempDir,
  startHarnessServer,
} from './server-harness.js';

// Real processes start and stop here; nothing is timed, the limits only catch hangs.
vi.setConfig({ testTimeout: 60_000, hookTimeout: 60_000 });

describeEachDatabase('inactivity_duration of a dev environment on the local backend', (databaseUrl) => {
  const temp = makeTempDir();
  let harness: HarnessServer;

  beforeAll(async () => {
    harness = await startHarnessServer({
      databaseUrl: databaseUrl(),
      dir: temp.dir,
      config: localBackendConfig(temp.dir),
    });
  });

  afterAll(async () => {
    await harness.terminateFleetsAndClose();
    temp.remove();
  });

  it('stops the environment with inactivity_duration_exceeded when nobody connects', async () => {
    const applied = await harness.call('/api/project/main/runs/apply', {
      plan: {
        run_spec: {
          ssh_key_pub: generateProjectSshKeyPair().publicKey,
          configuration: {
            type: 'dev-environment',
            name: 'idle-dev',
            inactivity_duration: '2s',
            resources: HOST_RESOURCES,
          },
        },
      },
    });
    expect(applied.status).toBe(200);

    const ended = await harness.waitForRun('idle-dev', ['terminated', 'failed', 'done']);
    const submission = ended.jobs[0]?.job_submissions.at(-1);
    expect(submission).toMatchObject({
      status: 'terminated',
      termination_reason: 'inactivity_duration_exceeded',
    });
    expect(submission?.inactivity_secs).toBeGreaterThanOrEqual(2);
  });
});
