/**
 * dstack's model endpoint end to end: a real server (SQLite, then Postgres) with the local backend runs two
 * services that declare `model`, each a small Node OpenAI-compatible server (no weights: it
 * answers `models`, `chat/completions` with or without SSE, `completions` and `embeddings`),
 * and the official `openai` client uses `/proxy/models/main/` as its base URL.
 */
import { createHash } from 'node:crypto';
import { readdirSync } from 'node:fs';
import { join } from 'node:path';
import { findFreePort } from '@dstack/shim';
import OpenAI from 'openai';
import { afterAll, beforeAll, expect, it, vi } from 'vitest';
import { bodySha256, openAiBody, postLargeBody } from './large-upload.js';
import {
  ADMIN_TOKEN,
  applyTask,
  describeEachDatabase,
  type HarnessServer,
  HOST_RESOURCES,
  localBackendConfig,
  makeTempDir,
  startHarnessServer,
  waitFor,
} from './server-harness.js';

const MIB = 1024 * 1024;

// Real processes start and stop here; nothing is timed, the limits only catch hangs.
vi.setConfig({ testTimeout: 60_000, hookTimeout: 60_000 });

/**
 * The model server the services run (`node -e "$MODEL_SERVER_JS"`): OpenAI's wire shapes at
 * `$MODEL_PREFIX`, every answer saying in `x-seen-path` what path it was asked and in
 * `x-body-sha256` the hash of the body it got; with `x-answer-at-bytes: N` it answers
 * `{"received"}` as soon as N bytes of the body have come, before the rest. A streamed chat
 * completion sends two chunks with a pause between them, then holds its last chunk until
 * `/release` is asked: a client that sees the first chunk before asking got it unbuffered.
 */
const MODEL_SERVER_JS = String.raw`
const http = require('http');
const model = process.env.MODEL_NAME;
const prefix = process.env.MODEL_PREFIX;
let release = null;
const chunk = (delta, finishReason) => 'data: ' + JSON.stringify({
  id: 'chatcmpl-1', object: 'chat.completion.chunk', created: 1, model,
  choices: [{ index: 0, delta, finish_reason: finishReason || null }],
}) + '\n\n';
http.createServer((request, response) => {
  const chunks = [];
  let received = 0;
  const json = (status, value) => {
    response.writeHead(status, { 'content-type': 'application/json' });
    response.end(JSON.stringify(value));
  };
  const answerAt = Number(request.headers['x-answer-at-bytes'] || Infinity);
  request.on('data', (data) => {
    chunks.push(data);
    received += data.length;
    if (received >= answerAt && !response.headersSent) json(200, { received });
  });
  request.on('end', () => {
    if (response.headersSent) return;
    const raw = Buffer.concat(chunks);
    const body = raw.toString('utf8');
    response.setHeader('x-seen-path', request.url);
    response.setHeader('x-body-sha256', require('crypto').createHash('sha256').update(raw).digest('hex'));
    if (request.url === '/release') {
      const held = release;
      release = null;
      if (held) held();
      return json(200, { released: held !== null });
    }
    const path = request.url.startsWith(prefix + '/') ? request.url.slice(prefix.length) : null;
    if (request.method === 'GET' && path === '/models') {
      return json(200, { object: 'list', data: [{ id: model, object: 'model', created: 0, owned_by: 'me' }] });
    }
    if (request.method !== 'POST' || path === null) return json(404, { error: { message: 'no route ' + request.url } });
    const asked = JSON.parse(body);
    const seen = JSON.stringify({ model, path: request.url, authorization: request.headers.authorization || null });
    if (path === '/chat/completions' && asked.stream) {
      response.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' });
      response.write(chunk({ role: 'assistant', content: 'Hello' }));
      setTimeout(() => response.write(chunk({ content: ' from' })), 50);
      release = () => {
        response.write(chunk({ content: ' ' + model }));
        response.write(chunk({}, 'stop'));
        response.end('data: [DONE]\n\n');
      };
      return;
    }
    const usage = { prompt_tokens: 1, completion_tokens: 1, total_tokens: 2 };
    if (path === '/chat/completions') {
      return json(200, { id: 'chatcmpl-2', object: 'chat.completion', created: 1, model, usage,
        choices: [{ index: 0, finish_reason: 'stop', message: { role: 'assistant', content: seen } }] });
    }
    if (path === '/completions') {
      return json(200, { id: 'cmpl-1', object: 'text_completion', created: 1, model, usage,
        choices: [{ index: 0, finish_reason: 'stop', logprobs: null, text: seen }] });
    }
    if (path === '/embeddings') {
      return json(200, { object: 'list', model, usage: { prompt_tokens: 1, total_tokens: 1 },
        data: [{ object: 'embedding', index: 0, embedding: [0.25, 0.5] }] });
    }
    json(404, { error: { message: 'no route ' + request.url } });
  });
}).listen(Number(process.env.MODEL_PORT), '127.0.0.1');
`;

/** A service running the model server for `model` (a name, or `{name, prefix}`) on a free port. */
async function modelService(runName: string, model: string | { name: string; prefix: string }) {
  const port = await findFreePort();
  const name = typeof model === 'string' ? model : model.name;
  const prefix = typeof model === 'string' ? '/v1' : model.prefix;
  return {
    type: 'service',
    name: runName,
    port,
    model,
    env: { MODEL_SERVER_JS, MODEL_NAME: name, MODEL_PREFIX: prefix, MODEL_PORT: String(port) },
    commands: [`exec '${process.execPath}' -e "$MODEL_SERVER_JS"`],
    resources: HOST_RESOURCES,
  };
}

/** The content of a chat completion the model server answered without streaming: what it saw. */
interface Seen {
  model: string;
  path: string;
  authorization: string | null;
}

describeEachDatabase('the model endpoint on the local backend', (databaseUrl) => {
  const temp = makeTempDir();
  let harness: HarnessServer;
  let outsiderToken: string;
  let client: OpenAI;
  const bearer = (token: string) => ({ authorization: `Bearer ${token}` });
  const modelsUrl = (rest: string) => `${harness.server.url}/proxy/models/main/${rest}`;

  /** Waits until the service's own model server answers through the service proxy. */
  async function waitForModelServer(runName: string, prefix: string): Promise<void> {
    await harness.waitForRun(runName, ['running']);
    await waitFor(
      `the model server of ${runName}`,
      async () => {
        const answer = await fetch(`${harness.server.url}/proxy/services/main/${runName}${prefix}/models`, {
          headers: bearer(ADMIN_TOKEN),
        });
        await answer.arrayBuffer();
        return answer.status === 200 ? true : null;
      },
      60_000,
    );
  }

  beforeAll(async () => {
    harness = await startHarnessServer({
      databaseUrl: databaseUrl(),
      dir: temp.dir,
      config: localBackendConfig(temp.dir),
    });
    outsiderToken = await harness.createUser('outsider');
    client = new OpenAI({
      apiKey: ADMIN_TOKEN,
      baseURL: `${harness.server.url}/proxy/models/main/`,
      maxRetries: 0,
    });
    const alpha = await applyTask(harness, await modelService('llm-alpha', 'org/alpha'));
    expect(alpha.service?.model).toEqual({
      name: 'org/alpha',
      base_url: '/proxy/services/main/llm-alpha/v1',
      type: 'chat',
    });
    await applyTask(harness, await modelService('llm-beta', { name: 'org/beta', prefix: '/openai/v1' }));
    await waitForModelServer('llm-alpha', '/v1');
    await waitForModelServer('llm-beta', '/openai/v1');
  });

  afterAll(async () => {
    await harness.terminateFleetsAndClose();
    temp.remove();
  });

  it('lists the running services that declare a model, in OpenAI shape', async () => {
    const listed = [];
    for await (const model of client.models.list()) listed.push(model);
    expect(listed).toEqual([
      { id: 'org/alpha', object: 'model', created: expect.any(Number), owned_by: 'main' },
      { id: 'org/beta', object: 'model', created: expect.any(Number), owned_by: 'main' },
    ]);
    expect(await client.models.retrieve('org/beta')).toMatchObject({ id: 'org/beta', object: 'model' });
  });

  it('streams a chat completion through the openai client, each chunk as the service sends it', async () => {
    const stream = await client.chat.completions.create({
      model: 'org/alpha',
      messages: [{ role: 'user', content: 'Hi' }],
      stream: true,
    });
    const chunks = stream[Symbol.asyncIterator]();
    const first = await chunks.next();
    expect(first.done).toBe(false);
    expect(first.value?.choices[0]?.delta).toEqual({ role: 'assistant', content: 'Hello' });
    // The second chunk comes after a pause, the last only once released: both are still to come.
    const second = await chunks.next();
    expect(second.value?.choices[0]?.delta.content).toBe(' from');
    const release = await fetch(`${harness.server.url}/proxy/services/main/llm-alpha/release`, {
      headers: bearer(ADMIN_TOKEN),
    });
    expect(await release.json()).toEqual({ released: true });
    let rest = '';
    let finishReason: string | null | undefined;
    for (let next = await chunks.next(); !next.done; next = await chunks.next()) {
      rest += next.value.choices[0]?.delta.content ?? '';
      finishReason = next.value.choices[0]?.finish_reason ?? finishReason;
    }
    expect(rest).toBe(' org/alpha');
    expect(finishReason).toBe('stop');
  });

  it("routes by the body's model to the service's prefix, without the dstack token", async () => {
    const beta = await client.chat.completions.create({
      model: 'org/beta',
      messages: [{ role: 'user', content: 'Hi' }],
    });
    expect(JSON.parse(beta.choices[0]?.message.content ?? '') as Seen).toEqual({
      model: 'org/beta',
      path: '/openai/v1/chat/completions',
      authorization: null,
    });
    const completion = await client.completions.create({ model: 'org/alpha', prompt: 'Once' });
    expect(JSON.parse(completion.choices[0]?.text ?? '') as Seen).toMatchObject({
      model: 'org/alpha',
      path: '/v1/completions',
    });
    const { data: embedding, response } = await client.embeddings
      .create({ model: 'org/beta', input: 'text', encoding_format: 'float' })
      .withResponse();
    expect(embedding.data[0]?.embedding).toEqual([0.25, 0.5]);
    expect(response.headers.get('x-seen-path')).toBe('/openai/v1/embeddings');
  });

  it('answers in OpenAI error shape: 404 unknown model, 401 without token, 403 outsider, 400 no model', async () => {
    const unknown = await client.chat.completions
      .create({ model: 'org/nope', messages: [{ role: 'user', content: 'Hi' }] })
      .catch((error: unknown) => error);
    expect(unknown).toBeInstanceOf(OpenAI.NotFoundError);
    expect(unknown).toMatchObject({ status: 404, code: 'model_not_found' });
    expect((unknown as Error).message).toContain('Model org/nope not found in project main');

    const noToken = await fetch(modelsUrl('chat/completions'), {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'org/alpha', messages: [] }),
    });
    expect(noToken.status).toBe(401);
    expect(await noToken.json()).toEqual({
      error: {
        message: expect.stringContaining('Not authenticated'),
        type: 'authentication_error',
        param: null,
        code: 'not_authenticated',
      },
    });
    expect((await fetch(modelsUrl('models'))).status).toBe(401);
    const badToken = new OpenAI({ apiKey: 'not-a-token', baseURL: client.baseURL, maxRetries: 0 });
    await expect(badToken.models.list()).rejects.toBeInstanceOf(OpenAI.AuthenticationError);

    const outsider = await fetch(modelsUrl('models'), { headers: bearer(outsiderToken) });
    expect(outsider.status).toBe(403);
    expect(((await outsider.json()) as { error: { code: string } }).error.code).toBe('forbidden');

    const noModel = await fetch(modelsUrl('embeddings'), {
      method: 'POST',
      headers: { ...bearer(ADMIN_TOKEN), 'content-type': 'application/json' },
      body: JSON.stringify({ input: 'text' }),
    });
    expect(noModel.status).toBe(400);
    expect(((await noModel.json()) as { error: { param: string; message: string } }).error).toMatchObject({
      param: 'model',
      message: 'model: field required',
    });
    const notJson = await fetch(modelsUrl('completions'), {
      method: 'POST',
      headers: bearer(ADMIN_TOKEN),
      body: '{"model":',
    });
    expect(notJson.status).toBe(400);

    const wrongMethod = await fetch(modelsUrl('chat/completions'), { headers: bearer(ADMIN_TOKEN) });
    expect(wrongMethod.status).toBe(405);
    expect(wrongMethod.headers.get('allow')).toBe('POST');
    const unknownPath = await fetch(modelsUrl('audio/speech'), {
      method: 'POST',
      headers: bearer(ADMIN_TOKEN),
      body: '{}',
    });
    expect(unknownPath.status).toBe(404);
    expect(((await unknownPath.json()) as { error: { code: string } }).error.code).toBe('not_found');
    const unknownRetrieve = await fetch(modelsUrl('models/org%2Fnope'), { headers: bearer(ADMIN_TOKEN) });
    expect(unknownRetrieve.status).toBe(404);
  });

  it('sends a 20 MiB body on intact, whether its model comes first or last', async () => {
    for (const modelAt of ['first', 'last'] as const) {
      const body = openAiBody('org/alpha', 20 * MIB, { modelAt, endpoint: 'embeddings' });
      const answer = await postLargeBody(modelsUrl('embeddings'), bearer(ADMIN_TOKEN), body);
      expect(answer.status, modelAt).toBe(200);
      expect(answer.headers['x-seen-path']).toBe('/v1/embeddings');
      expect(answer.headers['x-body-sha256'], modelAt).toBe(bodySha256(body));
    }
    // What was read past the memory budget (the body whose model came last) is not left on disk.
    expect(readdirSync(join(temp.dir, 'data', 'model-requests'))).toEqual([]);

    // OpenAI's client sends the fields in the order given (its Python client puts `input` first).
    const input = 'é✓ '.repeat(4 * MIB);
    const { data: embedding, response } = await client.embeddings
      .create({ input, model: 'org/beta', encoding_format: 'float' })
      .withResponse();
    expect(embedding.data[0]?.embedding).toEqual([0.25, 0.5]);
    expect(response.headers.get('x-seen-path')).toBe('/openai/v1/embeddings');
    expect(response.headers.get('x-body-sha256')).toBe(
      createHash('sha256')
        .update(JSON.stringify({ input, model: 'org/beta', encoding_format: 'float' }))
        .digest('hex'),
    );
  });

  it('streams the body to the replica: it can answer before the client has sent it all', async () => {
    const body = openAiBody('org/alpha', 20 * MIB, { modelAt: 'first', endpoint: 'embeddings' });
    const answer = await postLargeBody(
      modelsUrl('embeddings'),
      { ...bearer(ADMIN_TOKEN), 'x-answer-at-bytes': String(MIB) },
      body,
    );
    expect(answer.status).toBe(200);
    expect((JSON.parse(answer.text) as { received: number }).received).toBeGreaterThanOrEqual(MIB);
    expect(answer.writtenWhenAnswered).toBeLessThan(body.size);
  });

  it('refuses a body declared over 64 MiB before reading it', async () => {
    const body = openAiBody('org/alpha', 64 * MIB + 1, { modelAt: 'first', endpoint: 'chat' });
    const answer = await postLargeBody(modelsUrl('chat/completions'), bearer(ADMIN_TOKEN), body);
    expect(answer.status).toBe(413);
    expect(JSON.parse(answer.text)).toMatchObject({
      error: { code: 'request_too_large', message: expect.stringContaining(`${64 * MIB + 1} bytes`) },
    });
    expect(answer.writtenWhenAnswered).toBeLessThan(body.size);
  });

  it('forgets the model of a stopped service', async () => {
    const stop = await harness.call('/api/project/main/runs/stop', {
      runs_names: ['llm-beta'],
      abort: false,
    });
    expect(stop.status).toBe(200);
    await harness.waitForRun('llm-beta', ['terminated', 'failed', 'done']);
    const listed = [];
    for await (const model of client.models.list()) listed.push(model.id);
    expect(listed).toEqual(['org/alpha']);
    await expect(
      client.chat.completions.create({ model: 'org/beta', messages: [{ role: 'user', content: 'Hi' }] }),
    ).rejects.toBeInstanceOf(OpenAI.NotFoundError);
  });
});
