/**
 * What dstack users type every day (issue 30), through the built CLI against a real
 * `dstack server` with the local backend: configuration from the environment (CI), and
 * `dstack apply` with env, overrides, run arguments and profiles.
 */
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { CLI_TEST_TIMEOUT_MS, CliHarness } from '../__fixtures__/cli-harness.js';
import { type RealServer, startRealServer } from '../__fixtures__/real-server.js';

let server: RealServer;
let harness: CliHarness;

beforeAll(async () => {
  server = await startRealServer();
}, 60_000);

afterAll(async () => {
  await server?.stop();
});

beforeEach(() => {
  harness = new CliHarness();
});

afterEach(() => {
  harness.cleanUp();
});

describe('DSTACK_SERVER_URL and DSTACK_TOKEN', { timeout: CLI_TEST_TIMEOUT_MS }, () => {
  it('configure dstack ps without ~/.dstack/config.yml', async () => {
    const result = await harness.run(['ps'], {
      DSTACK_SERVER_URL: server.url,
      DSTACK_TOKEN: server.token,
      DSTACK_PROJECT: 'main',
    });
    expect(result).toMatchObject({ code: 0, stderr: '' });
    expect(result.stdout).toMatch(/^NAME\s+BACKEND\s+GPU\s+PRICE\s+STATUS\s+SUBMITTED\n/);
  });

  it('need a project, as in dstack', async () => {
    const result = await harness.run(['ps'], { DSTACK_SERVER_URL: server.url, DSTACK_TOKEN: server.token });
    expect(result.code).toBe(1);
    expect(result.stderr).toBe(
      'error: DSTACK_SERVER_URL and DSTACK_TOKEN are set, but the project is not specified. Set DSTACK_PROJECT or use --project\n',
    );
    const named = await harness.run(['ps', '--project', 'main'], {
      DSTACK_SERVER_URL: server.url,
      DSTACK_TOKEN: server.token,
    });
    expect(named).toMatchObject({ code: 0, stderr: '' });
  });

  it('refuse DSTACK_SERVER_URL without DSTACK_TOKEN when no project is configured', async () => {
    const result = await harness.run(['ps'], { DSTACK_SERVER_URL: server.url, DSTACK_PROJECT: 'main' });
    expect(result.code).toBe(1);
    expect(result.stderr).toBe('error: DSTACK_SERVER_URL is set, but DSTACK_TOKEN is not set\n');
  });

  it('DSTACK_TOKEN alone overrides the configured token', async () => {
    await harness.useProject(server.url, 'not-the-token');
    const refused = await harness.run(['ps']);
    expect(refused.code).toBe(1);
    expect(refused.stderr).toContain('invalid token for project main');
    const result = await harness.run(['ps'], { DSTACK_TOKEN: server.token });
    expect(result).toMatchObject({ code: 0, stderr: '' });
  });
});
