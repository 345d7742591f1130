import { afterEach, beforeEach, expect } from 'vitest';
import { CliHarness } from './cli-harness.js';
import { FakeDstackServer, type FakeHandler } from './fake-dstack-server.js';

/** A CLI command test's harness and fake server, new for each test. */
export interface FakeServerCli {
  readonly harness: CliHarness;
  /** The fake server the test started, if it started one. */
  readonly server: FakeDstackServer | undefined;
  /** Starts the fake server with `handlers` and points the harness's CLI config at it. */
  startServer(handlers: Record<string, FakeHandler>): Promise<FakeDstackServer>;
}

/**
 * Registers the hooks of a file of CLI command tests: a fresh `CliHarness` before each test;
 * after it, the harness cleaned up, the fake server closed, and the test failed when the server
 * saw a request it could not answer (its `problems`).
 */
export function fakeServerCli(): FakeServerCli {
  let harness: CliHarness | undefined;
  let server: FakeDstackServer | undefined;

  beforeEach(() => {
    harness = new CliHarness();
  });

  afterEach(async () => {
    harness?.cleanUp();
    const problems = server?.problems ?? [];
    await server?.close();
    server = undefined;
    expect(problems).toEqual([]);
  });

  return {
    get harness() {
      if (harness === undefined) throw new Error('fakeServerCli: the harness exists only during a test');
      return harness;
    },
    get server() {
      return server;
    },
    async startServer(handlers) {
      server = await FakeDstackServer.start({ handlers });
      await this.harness.useProject(server.url, server.token);
      return server;
    },
  };
}
