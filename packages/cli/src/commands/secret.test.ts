import type { Secret } from '@dstack/core';
import { describe, expect, it } from 'vitest';
import { CLI_TEST_TIMEOUT_MS } from '../__fixtures__/cli-harness.js';
import { HttpAnswer } from '../__fixtures__/fake-dstack-server.js';
import { fakeServerCli } from '../__fixtures__/fake-server-cli.js';

const cli = fakeServerCli();

const secret = (name: string, value: string | null): Secret => ({ id: `id-${name}`, name, value });

describe('dstack secret', { timeout: CLI_TEST_TIMEOUT_MS }, () => {
  it('lists names with hidden values, with or without `list`', async () => {
    const fake = await cli.startServer({
      'secrets/list': () => [secret('hf_token', null), secret('my_secret', null)],
    });
    for (const args of [['secret'], ['secret', 'list']]) {
      const result = await cli.harness.run(args);
      expect(result, args.join(' ')).toMatchObject({ code: 0, stderr: '' });
      expect(result.stdout.split('\n')).toEqual([
        expect.stringMatching(/^NAME\s+VALUE$/),
        expect.stringMatching(/^hf_token\s+\*{6}$/),
        expect.stringMatching(/^my_secret\s+\*{6}$/),
        '',
      ]);
    }
    expect(fake.requestsTo('secrets/list')).toHaveLength(2);
  });

  it('gets one value, printed safely', async () => {
    const fake = await cli.startServer({
      'secrets/get': (body: { name: string }) => secret(body.name, 'v4lue\u001b[31m'),
    });
    const result = await cli.harness.run(['secret', 'get', 'hf_token']);
    expect(result).toMatchObject({ code: 0, stderr: '' });
    expect(result.stdout).toMatch(/^NAME\s+VALUE\nhf_token\s+v4lue\\x1b\[31m\n$/);
    expect(fake.requestsTo('secrets/get')[0]?.body).toEqual({ name: 'hf_token' });
  });

  it('sets a secret and says OK', async () => {
    const fake = await cli.startServer({
      'secrets/create_or_update': (body: { name: string; value: string }) => secret(body.name, body.value),
    });
    const result = await cli.harness.run(['secret', 'set', 'hf_token', 'the value']);
    expect(result).toMatchObject({ code: 0, stdout: 'OK\n', stderr: '' });
    expect(fake.requestsTo('secrets/create_or_update')[0]?.body).toEqual({
      name: 'hf_token',
      value: 'the value',
    });
  });

  it('deletes with -y, and refuses to guess without a terminal', async () => {
    const fake = await cli.startServer({ 'secrets/delete': () => null });
    const unconfirmed = await cli.harness.run(['secret', 'delete', 'hf_token']);
    expect(unconfirmed.code).toBe(1);
    expect(unconfirmed.stderr).toContain('pass -y to confirm');
    expect(fake.requestsTo('secrets/delete')).toEqual([]);

    const result = await cli.harness.run(['secret', 'delete', 'hf_token', '-y']);
    expect(result).toMatchObject({ code: 0, stdout: 'OK\n', stderr: '' });
    expect(fake.requestsTo('secrets/delete')[0]?.body).toEqual({ secrets_names: ['hf_token'] });
  });

  it("prints the server's refusal: a missing secret, a member asking for a value", async () => {
    await cli.startServer({
      'secrets/get': () =>
        new HttpAnswer(404, {
          detail: [{ msg: 'Secret "nope" does not exist in this project', code: 'resource_not_exists' }],
        }),
      'secrets/create_or_update': () =>
        new HttpAnswer(403, { detail: [{ msg: 'Access denied', code: 'forbidden' }] }),
    });
    const missing = await cli.harness.run(['secret', 'get', 'nope']);
    expect(missing.code).toBe(1);
    expect(missing.stderr).toContain('Secret "nope" does not exist in this project');
    const denied = await cli.harness.run(['secret', 'set', 'x', 'y']);
    expect(denied.code).toBe(1);
    expect(denied.stderr).toContain('Access denied');
  });
});
