import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { saveCliConfig } from '../config/cli-config.js';
import type { CliIo } from '../io.js';
import { type RunningServer, type ServerModule, serverCommand } from './server.js';

let directory: string;
const savedDirectory = process.env.DSTACK_CLI_CONFIG_DIR;

beforeEach(() => {
  directory = mkdtempSync(join(tmpdir(), 'dstack-cli-server-'));
  process.env.DSTACK_CLI_CONFIG_DIR = directory;
});

afterEach(() => {
  if (savedDirectory === undefined) delete process.env.DSTACK_CLI_CONFIG_DIR;
  else process.env.DSTACK_CLI_CONFIG_DIR = savedDirectory;
  rmSync(directory, { recursive: true, force: true });
});

function bufferIo() {
  const out: string[] = [];
  const io: CliIo = {
    stdout: (text) => out.push(text),
    stderr: (text) => out.push(text),
    stderrColors: false,
  };
  return { io, output: () => out.join('') };
}

/** A stand-in for `@dstack/server` that records how it was started and closed. */
function fakeServerModule(adminToken: string | null) {
  const calls: { started: unknown[]; closed: number } = { started: [], closed: 0 };
  const module: ServerModule = {
    async startServer(options): Promise<RunningServer> {
      calls.started.push(options);
      return {
        url: 'http://127.0.0.1:3000',
        adminToken,
        close: async () => {
          calls.closed += 1;
        },
      };
    },
  };
  return { module, calls };
}

describe('serverCommand', () => {
  it('prints the token and URL, registers the main project and closes on shutdown', async () => {
    await saveCliConfig(
      { projects: [{ name: 'other', url: 'http://example.com', token: 'x', default: true }] },
      join(directory, 'config.yml'),
    );
    const { module, calls } = fakeServerModule('admin-token');
    const buffers = bufferIo();
    const code = await serverCommand({ host: '0.0.0.0', port: '3001' }, buffers.io, {
      loadServer: async () => module,
      waitForShutdown: () => Promise.resolve(),
    });
    expect(code).toBe(0);
    expect(calls).toEqual({ started: [{ host: '0.0.0.0', port: 3001 }], closed: 1 });
    expect(buffers.output()).toBe(
      'The admin token is admin-token\nThe server is running at http://127.0.0.1:3000\n',
    );
    expect(parse(readFileSync(join(directory, 'config.yml'), 'utf8'))).toEqual({
      projects: [
        { name: 'other', url: 'http://example.com', token: 'x', default: false },
        { name: 'main', url: 'http://127.0.0.1:3000', token: 'admin-token', default: true },
      ],
    });
  });

  it('leaves the configuration alone when the server has no new token', async () => {
    const { module } = fakeServerModule(null);
    const buffers = bufferIo();
    await serverCommand({}, buffers.io, {
      loadServer: async () => module,
      waitForShutdown: () => Promise.resolve(),
    });
    expect(buffers.output()).toBe('The server is running at http://127.0.0.1:3000\n');
    expect(() => readFileSync(join(directory, 'config.yml'))).toThrow();
  });

  it('rejects a bad port before starting anything', async () => {
    const { module, calls } = fakeServerModule('token');
    await expect(
      serverCommand({ port: 'http' }, bufferIo().io, { loadServer: async () => module }),
    ).rejects.toThrow("--port: expected a port number (0-65535), got 'http'");
    expect(calls.started).toEqual([]);
  });
});
