import { createHash } from 'node:crypto';
import { createServer, type Server } from 'node:http';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { agentDownloadDigest } from './agent-download-digest.js';

describe('agentDownloadDigest (a real HTTP server)', () => {
  const body = Buffer.from('the agent runtime, as bytes\n'.repeat(1000));
  let server: Server;
  let base = '';
  let reads = 0;

  beforeAll(async () => {
    server = createServer((request, response) => {
      reads += 1;
      if (request.url === '/runtime.tgz') response.writeHead(200).end(body);
      else response.writeHead(404).end();
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    base = `http://127.0.0.1:${(server.address() as { port: number }).port}`;
  });

  afterAll(async () => {
    await new Promise((resolve) => server.close(resolve));
  });

  it('is the sha256 and size of what the URL serves, read once', async () => {
    const expected = { sha256: createHash('sha256').update(body).digest('hex'), size: body.length };
    expect(await agentDownloadDigest(`${base}/runtime.tgz`)).toEqual(expected);
    const before = reads;
    expect(await agentDownloadDigest(`${base}/runtime.tgz`)).toEqual(expected);
    expect(reads).toBe(before);
  });

  it('is null, with a warning naming the setting, when the URL cannot be read', async () => {
    const warn = vi.spyOn(console, 'warn').mockImplementation(() => undefined);
    try {
      expect(await agentDownloadDigest(`${base}/missing.tgz`)).toBeNull();
      expect(warn.mock.calls[0]?.[0]).toContain('DSTACK_SHIM_DOWNLOAD_URL');
    } finally {
      warn.mockRestore();
    }
  });
});
