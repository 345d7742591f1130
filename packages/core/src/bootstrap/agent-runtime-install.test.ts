/**
 * The agent runtime's install lines run by `sh` against a real HTTP server (with byte ranges, as
 * npm's registry and S3 serve them), on a stand-in runtime packed as npm packs the real one (files
 * 0644, under `package/dist/dstack-runtime`): its "loader" is a script that checks the options it
 * is given and runs the "node" after them.
 */
import { execFile } from 'node:child_process';
import { createHash } from 'node:crypto';
import { mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { createServer, type IncomingHttpHeaders, type Server } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { AGENT_BOOTSTRAP_FAILURE_MARKER, agentRuntimeInstallLines } from './agent-runtime-install.js';

const run = promisify(execFile);
const FAST_RETRY = { attempts: 2, seconds: 0 };

describe('agentRuntimeInstallLines', () => {
  let work = '';
  let archive: Buffer;
  let sha256 = '';
  let server: Server;
  let base = '';
  let requests: IncomingHttpHeaders[] = [];
  let directory = '';

  beforeAll(async () => {
    work = await mkdtemp(join(tmpdir(), 'dstack-agent-install-'));
    const root = join(work, 'pack', 'package', 'dist', 'dstack-runtime');
    await mkdir(join(root, 'bin'), { recursive: true });
    await mkdir(join(root, 'lib'), { recursive: true });
    await writeFile(
      join(root, 'lib', 'ld-linux-x86-64.so.2'),
      '#!/bin/sh\n[ "$1" = --library-path ] && [ "$3" = --inhibit-cache ] || { echo "bad loader options: $*"; exit 9; }\nshift 3\nexec "$@"\n',
    );
    await writeFile(
      join(root, 'bin', 'node'),
      '#!/bin/sh\ncase "$2" in --version) echo 9.9.9 ;; *) echo "node ran $*" ;; esac\n',
    );
    await writeFile(join(root, 'shim.mjs'), '// the shim\n');
    await writeFile(join(root, 'runner.mjs'), '// the runner\n');
    await run('sh', [
      '-c',
      `chmod -R a-x,a+rX "${root}" && tar -czf "${work}/runtime.tgz" -C "${work}/pack" package`,
    ]);
    archive = await readFile(join(work, 'runtime.tgz'));
    sha256 = createHash('sha256').update(archive).digest('hex');
    server = createServer((request, response) => {
      requests.push(request.headers);
      if (request.url === '/unavailable.tgz') {
        response.writeHead(503).end();
        return;
      }
      if (request.url !== '/runtime.tgz') {
        response.writeHead(404).end();
        return;
      }
      const range = /^bytes=(\d+)-$/.exec(request.headers.range ?? '');
      const from = range ? Number(range[1]) : 0;
      response
        .writeHead(range ? 206 : 200, {
          'content-length': archive.length - from,
          ...(range ? { 'content-range': `bytes ${from}-${archive.length - 1}/${archive.length}` } : {}),
        })
        .end(archive.subarray(from));
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const address = server.address() as { port: number };
    base = `http://127.0.0.1:${address.port}`;
  });

  afterAll(async () => {
    await new Promise((resolve) => server?.close(resolve));
    await rm(work, { recursive: true, force: true });
  });

  beforeEach(async () => {
    requests = [];
    directory = await mkdtemp(join(work, 'host-'));
  });

  /** Runs the lines, then starts the "shim" as the VM bootstrap does; the output and exit status. */
  async function install(download: { url: string; sha256?: string | null; size?: number | null }) {
    const script = `${agentRuntimeInstallLines(download, join(directory, 'agent'), FAST_RETRY)}"$@" "$root/shim.mjs" --home x\n`;
    return run('sh', ['-c', script]).then(
      ({ stdout }) => ({ status: 0, stdout }),
      (error: { code: number; stdout: string }) => ({ status: error.code, stdout: error.stdout }),
    );
  }

  it('downloads, verifies, unpacks and starts the shim through the runtime’s loader', async () => {
    const result = await install({ url: `${base}/runtime.tgz`, sha256, size: archive.length });
    expect(result).toEqual({
      status: 0,
      stdout: `node ran ${directory}/agent/package/dist/dstack-runtime/shim.mjs --home x\n`,
    });
    // The archive is not kept once unpacked; what was installed is recorded.
    expect(await readFile(join(directory, 'agent', 'installed'), 'utf8')).toContain(sha256);
  });

  it('starts again at the next boot without downloading', async () => {
    const download = { url: `${base}/runtime.tgz`, sha256, size: archive.length };
    await install(download);
    requests = [];
    expect((await install(download)).status).toBe(0);
    expect(requests).toEqual([]);
  });

  it('resumes a partial download from where it stopped (a reboot in the middle)', async () => {
    await mkdir(join(directory, 'agent'));
    await writeFile(join(directory, 'agent', 'runtime.tgz'), archive.subarray(0, 100));
    const result = await install({ url: `${base}/runtime.tgz`, sha256, size: archive.length });
    expect(result.status).toBe(0);
    expect(requests.map((headers) => headers.range)).toEqual(['bytes=100-']);
  });

  it('refuses an archive whose sha256 differs, saying so and ending with the failure marker', async () => {
    const wrong = '0'.repeat(64);
    const result = await install({ url: `${base}/runtime.tgz`, sha256: wrong, size: archive.length });
    expect(result.status).toBe(1);
    expect(result.stdout).toContain(`has sha256 ${sha256}, expected ${wrong}`);
    expect(result.stdout.trim().split('\n').at(-1)).toBe(
      `${AGENT_BOOTSTRAP_FAILURE_MARKER} cannot download the agent runtime from ${base}/runtime.tgz (2 tries)`,
    );
    // A bad download is not kept for the next try.
    expect(requests.every((headers) => headers.range === undefined)).toBe(true);
  });

  it('ends with the failure marker at once when the URL answers 404: another try cannot mend it', async () => {
    const result = await install({ url: `${base}/missing.tgz` });
    expect(result.status).toBe(1);
    expect(result.stdout.trim().split('\n').at(-1)).toBe(
      `${AGENT_BOOTSTRAP_FAILURE_MARKER} cannot download the agent runtime from ${base}/missing.tgz (HTTP 404)`,
    );
    expect(requests).toHaveLength(1);
  });

  it('tries again while the server is unavailable (503), then ends with the failure marker', async () => {
    const result = await install({ url: `${base}/unavailable.tgz` });
    expect(result.status).toBe(1);
    expect(result.stdout.trim().split('\n').at(-1)).toBe(
      `${AGENT_BOOTSTRAP_FAILURE_MARKER} cannot download the agent runtime from ${base}/unavailable.tgz (2 tries)`,
    );
    expect(requests).toHaveLength(FAST_RETRY.attempts);
  });

  it('ends with the failure marker when the runtime does not start', async () => {
    const result = await install({ url: `${base}/runtime.tgz` });
    expect(result.status).toBe(0);
    const broken = join(directory, 'agent', 'package', 'dist', 'dstack-runtime', 'bin', 'node');
    await writeFile(broken, '#!/bin/sh\necho "cannot open shared object"; exit 127\n');
    const again = await install({ url: `${base}/runtime.tgz` });
    expect(again.status).toBe(1);
    expect(again.stdout).toContain(
      `${AGENT_BOOTSTRAP_FAILURE_MARKER} the agent runtime does not start on this host: cannot open shared object`,
    );
  });

  it('refuses a URL that is not http(s) and a digest that is not sha256 hex, naming the field', () => {
    expect(() => agentRuntimeInstallLines({ url: 'file:///x' }, '/d')).toThrow('agent_download_url');
    expect(() => agentRuntimeInstallLines({ url: base, sha256: 'abc' }, '/d')).toThrow(
      'agent_download_sha256',
    );
  });
});
