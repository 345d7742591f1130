/**
 * The model endpoint under large bodies it must refuse (issue 28, H8): `dstack-server` as a
 * real child process, its memory read from /proc (its peak resident set, reset before each
 * case), four 60 MiB posts at once per case. Requests it can refuse without the body (a
 * project without models, a model named at the body's start that does not exist, a service
 * without a replica or past its rate limit) are answered before the body is sent; a body
 * whose `model` comes last is read (and kept on disk) before its 404. Either way the server's
 * memory stays where it was.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { type LargeBody, type LargePostAnswer, openAiBody, postLargeBody } from './large-upload.js';
import { ADMIN_TOKEN, applyTask, makeTempDir, type ServerApi, serverApi, waitFor } from './server-harness.js';

vi.setConfig({ testTimeout: 120_000, hookTimeout: 60_000 });

// The built bin (the suite's `pnpm test` builds first).
const BIN = fileURLToPath(new URL('../dist/bin/dstack-server.js', import.meta.url));
const MIB = 1024 * 1024;
const BODY_BYTES = 60 * MIB;
const CONCURRENT_POSTS = 4;
/** How far the server's memory may rise over a case (issue 28: "within 100 MB of where it was"). */
const ALLOWED_GROWTH_BYTES = 100 * 1000 * 1000;

/** `VmRSS` (now) and `VmHWM` (the peak since the last reset) of a process, in bytes. */
function memoryOf(pid: number): { resident: number; peak: number } {
  const status = readFileSync(`/proc/${pid}/status`, 'utf8');
  const kib = (field: string) => Number(new RegExp(`^${field}:\\s+(\\d+) kB`, 'm').exec(status)?.[1]) * 1024;
  return { resident: kib('VmRSS'), peak: kib('VmHWM') };
}

/** Makes the peak resident set start again from the current one (Linux's clear_refs, value 5). */
function resetPeak(pid: number): void {
  writeFileSync(`/proc/${pid}/clear_refs`, '5');
}

describe.skipIf(process.platform !== 'linux')('the model endpoint under 60 MiB bodies', () => {
  const temp = makeTempDir('dstack-model-memory-');
  let child: ChildProcess;
  let url: string;
  let api: ServerApi;
  let userToken: string;
  let output = '';

  beforeAll(async () => {
    if (!existsSync(BIN)) throw new Error(`${BIN} does not exist: run \`pnpm build\` before these tests`);
    child = spawn(process.execPath, [BIN], {
      env: {
        PATH: process.env.PATH ?? '',
        HOME: temp.dir,
        DSTACK_SERVER_DIR: temp.dir,
        DSTACK_SERVER_PORT: '0',
        DSTACK_SERVER_ADMIN_TOKEN: ADMIN_TOKEN,
      },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    child.stdout?.on('data', (chunk: Buffer) => {
      output += chunk.toString();
    });
    child.stderr?.on('data', (chunk: Buffer) => {
      output += chunk.toString();
    });
    url = await waitFor('the server to start', () => {
      if (child.exitCode !== null) throw new Error(`the server exited: ${output}`);
      return /The server is running at (\S+)/.exec(output)?.[1] ?? null;
    });
    api = serverApi(url);
    // Any user can make a project, and the project has no model.
    userToken = await api.createUser('someone');
    const created = await api.call('/api/projects/create', { project_name: 'own' }, userToken);
    expect(created.status).toBe(200);
    // A model whose service never gets a replica (no backend offers a GPU here), limited to one
    // request a minute per `x-caller`.
    await applyTask(api, {
      type: 'service',
      name: 'no-replica',
      port: 8000,
      model: 'org/no-replica',
      commands: ['true'],
      resources: { gpu: 1 },
      retry: { on_events: ['no-capacity'], duration: '1h' },
      rate_limits: [{ prefix: '/', rps: 1 / 60, burst: 0, key: { type: 'header', header: 'x-caller' } }],
    });
    await waitFor('the model to be listed', async () => {
      const answer = await fetch(`${url}/proxy/models/main/models`, { headers: bearer(ADMIN_TOKEN) });
      const listed = (await answer.json()) as { data?: Array<{ id: string }> };
      return listed.data?.some((model) => model.id === 'org/no-replica') ? true : null;
    });
  });

  afterAll(() => {
    if (child?.exitCode === null) child.kill('SIGKILL');
    temp.remove();
  });

  function bearer(token: string): Record<string, string> {
    return { authorization: `Bearer ${token}` };
  }

  /**
   * Sends the posts at once and checks the server's peak memory over them; resolves with the
   * answers. A small request first, so that what the route loads once is loaded before the baseline.
   */
  async function postAtOnce(
    path: string,
    headers: (index: number) => Record<string, string>,
    body: LargeBody,
  ): Promise<LargePostAnswer[]> {
    const pid = child.pid as number;
    await postLargeBody(`${url}${path}`, headers(-1), { ...body, size: MIB });
    const before = memoryOf(pid).resident;
    resetPeak(pid);
    const answers = await Promise.all(
      Array.from({ length: CONCURRENT_POSTS }, (_, index) =>
        postLargeBody(`${url}${path}`, headers(index), body),
      ),
    );
    const { peak } = memoryOf(pid);
    expect(peak - before, `peak ${peak} bytes, from ${before}`).toBeLessThan(ALLOWED_GROWTH_BYTES);
    return answers;
  }

  function errorOf(answer: LargePostAnswer): { code: string; message: string } {
    return (JSON.parse(answer.text) as { error: { code: string; message: string } }).error;
  }

  it('refuses posts to a project without models before their bodies are sent', async () => {
    const answers = await postAtOnce(
      '/proxy/models/own/chat/completions',
      () => bearer(userToken),
      openAiBody('org/any', BODY_BYTES, { modelAt: 'first', endpoint: 'chat' }),
    );
    for (const answer of answers) {
      expect(answer.status).toBe(404);
      expect(errorOf(answer)).toMatchObject({
        code: 'model_not_found',
        message: expect.stringContaining('own'),
      });
      expect(answer.writtenWhenAnswered).toBeLessThan(BODY_BYTES);
    }
  });

  it('refuses a model that does not exist from the start of the body', async () => {
    const answers = await postAtOnce(
      '/proxy/models/main/chat/completions',
      () => bearer(ADMIN_TOKEN),
      openAiBody('org/nope', BODY_BYTES, { modelAt: 'first', endpoint: 'chat' }),
    );
    for (const answer of answers) {
      expect(answer.status).toBe(404);
      expect(errorOf(answer).message).toBe('Model org/nope not found in project main');
      expect(answer.writtenWhenAnswered).toBeLessThan(BODY_BYTES);
    }
  });

  it("answers a model's rate limit and missing replica before its body is sent", async () => {
    // The warm-up request takes the minute's one request of its own caller.
    const answers = await postAtOnce(
      '/proxy/models/main/embeddings',
      (index) => ({ ...bearer(ADMIN_TOKEN), 'x-caller': index < 0 ? 'warm-up' : 'tester' }),
      openAiBody('org/no-replica', BODY_BYTES, { modelAt: 'first', endpoint: 'embeddings' }),
    );
    expect(answers.map((answer) => answer.status).sort()).toEqual([429, 429, 429, 503]);
    for (const answer of answers) {
      expect(answer.headers['retry-after']).toMatch(/^\d+$/);
      expect(answer.writtenWhenAnswered).toBeLessThan(BODY_BYTES);
    }
  });

  it('reads a body whose model comes last without holding it', async () => {
    const answers = await postAtOnce(
      '/proxy/models/main/chat/completions',
      () => bearer(ADMIN_TOKEN),
      openAiBody('org/nope', BODY_BYTES, { modelAt: 'last', endpoint: 'chat' }),
    );
    for (const answer of answers) {
      expect(answer.status).toBe(404);
      expect(errorOf(answer).message).toBe('Model org/nope not found in project main');
    }
  });
});
