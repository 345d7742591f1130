/**
 * A job's logs are stored once however many times they are pulled: two replicas that pull the
 * same batch from the runner (the first one's claim expired while it waited for the answer, or
 * it died before recording how far it had read) keep each entry once, keyed by its runner
 * position.
 */
import { randomUUID } from 'node:crypto';
import type { RunnerPullResponse } from '@dstack/core/agent-protocol';
import { RunnerClient } from '@dstack/runner';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { AgentConnector } from '../agents/index.js';
import { createAppContext } from '../app-context.js';
import type { AppContext } from '../context.js';
import { storeRunnerLogs } from '../logs/logs.js';
import { createEncryption } from '../security/encryption.js';
import { loadServerSettings } from '../settings.js';
import { createPipelineHarness, type PipelineHarness } from '../testing/pipeline-harness.test.helpers.js';
import { describeEachDialect } from '../testing/test-database.test.helpers.js';

vi.setConfig({ testTimeout: 60_000, hookTimeout: 60_000 });

/** Longer than a claim lasts without a heartbeat (the pipelines' 30 s). */
const CLAIM_EXPIRY_MS = 31_000;

const line = (text: string, position: number, timestamp: number) => ({
  message: Buffer.from(text).toString('base64'),
  timestamp,
  source: 'stdout' as const,
  position,
});

describeEachDialect('storeRunnerLogs', (getDb) => {
  let app: AppContext;

  beforeEach(() => {
    const { db, dialect } = getDb();
    app = createAppContext({
      db,
      dialect,
      settings: loadServerSettings({}),
      encryption: createEncryption(),
      signal: new AbortController().signal,
      agents: new AgentConnector(),
    });
  });

  it('stores an entry pulled twice once, and the entries of other jobs and positions', async () => {
    const job = { id: randomUUID(), project_id: 'p', run_id: randomUUID() };
    const other = { ...job, id: randomUUID() };
    const batch = { job_logs: [line('a\n', 1, 1_000), line('b\n', 2, 1_001)], runner_logs: [] };
    await storeRunnerLogs(app, job, batch);
    await storeRunnerLogs(app, job, {
      job_logs: [...batch.job_logs, line('c\n', 4, 1_003)],
      runner_logs: [],
    });
    await storeRunnerLogs(app, other, batch);
    // A runner that predates positions: stored as it comes.
    const unnumbered = { message: 'eA==', timestamp: 1_002, source: 'stdout' as const };
    await storeRunnerLogs(app, job, { job_logs: [unnumbered, unnumbered], runner_logs: [] });
    const rows = await app.db
      .selectFrom('job_logs')
      .select(['job_id', 'position', 'message'])
      .where('run_id', '=', job.run_id)
      .orderBy('id')
      .execute();
    expect(rows.filter((row) => row.job_id === job.id).map((row) => row.position)).toEqual([
      1,
      2,
      4,
      null,
      null,
    ]);
    expect(rows.filter((row) => row.job_id === other.id).map((row) => row.position)).toEqual([1, 2]);
  });
});

describe('two replicas pulling the same batch of a job on Postgres', () => {
  let harness: PipelineHarness | undefined;

  afterEach(async () => {
    vi.restoreAllMocks();
    await harness?.close();
    harness = undefined;
  });

  it('store its lines once', async () => {
    const h = await createPipelineHarness({ dialect: 'postgres' });
    harness = h;
    const run = await h.applyTask('twice', { commands: ['echo first-batch', 'sleep 120'] });
    await h.stepUntil(async () => (await h.jobs(run.id))[0]?.status === 'running');

    // The first replica's answer with the line waits (a slow network) until the test lets it go.
    const pull = RunnerClient.prototype.pull;
    let held = false;
    let letGo = () => {};
    const gate = new Promise<void>((resolve) => {
      letGo = resolve;
    });
    vi.spyOn(RunnerClient.prototype, 'pull').mockImplementation(async function (
      this: RunnerClient,
      timestamp: number,
    ): Promise<RunnerPullResponse> {
      const answer = await pull.call(this, timestamp);
      const hasLine = answer.job_logs.some((entry) =>
        Buffer.from(entry.message, 'base64').toString().includes('first-batch'),
      );
      if (hasLine && !held) {
        held = true;
        await gate;
      }
      return answer;
    });
    const first = h.server();
    const second = h.server();
    let firstPass: Promise<number> | undefined;
    for (let round = 0; round < 200 && !held; round++) {
      h.advance(1_000);
      firstPass = first.step('jobs-running');
      await Promise.race([firstPass, new Promise((resolve) => setTimeout(resolve, 50))]);
    }
    expect(held).toBe(true);

    // Its claim expires; the second replica takes the job over and pulls from the same point.
    h.advance(CLAIM_EXPIRY_MS);
    expect(await second.step('jobs-running')).toBe(1);
    letGo();
    await firstPass;

    const stored = await h.app.db
      .selectFrom('job_logs')
      .select('message')
      .where('run_id', '=', run.id)
      .execute();
    const lines = stored.map((row) => Buffer.from(row.message, 'base64').toString());
    expect(lines.filter((text) => text.includes('first-batch'))).toEqual(['first-batch\n']);
    expect(new Set(lines).size).toBe(lines.length);
  });
});
