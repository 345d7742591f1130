/**
 * A secret deleted after its run was accepted: the job is ended by the server when it would be
 * handed to its agents, naming the field and the secret (dstack's "Secrets interpolation error").
 */
import { afterEach, expect, it, vi } from 'vitest';
import { jobSpecOf } from '../db/json-columns.js';
import { createOrUpdateSecret, deleteSecrets } from '../secrets/secrets.js';
import { createPipelineHarness, type PipelineHarness } from '../testing/pipeline-harness.test.helpers.js';

vi.setConfig({ testTimeout: 60_000, hookTimeout: 60_000 });

let harness: PipelineHarness | undefined;

afterEach(async () => {
  await harness?.close();
  harness = undefined;
});

it('terminates a job whose secret was deleted before it reached its agent', async () => {
  const h = await createPipelineHarness();
  harness = h;
  await createOrUpdateSecret(h.app, h.project, 'api_key', 'the-value');
  const run = await h.applyTask('orphaned', { commands: ['true'], env: { KEY: `\${{ secrets.api_key }}` } });
  await deleteSecrets(h.app, h.project, ['api_key']);
  await h.stepUntil(async () =>
    ['terminating', 'terminated'].includes((await h.jobs(run.id))[0]?.status ?? ''),
  );
  const [job] = await h.jobs(run.id);
  expect(job).toMatchObject({
    termination_reason: 'terminated_by_server',
    termination_reason_message: expect.stringMatching(
      /^Secrets interpolation error: env\.KEY: secret "api_key" does not exist/,
    ),
  });
  // The stored spec keeps the reference, never a value.
  expect(jobSpecOf(job!).env.KEY).toBe(`\${{ secrets.api_key }}`);
});
