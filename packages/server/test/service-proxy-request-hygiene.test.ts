import { request as httpRequest } from 'node:http';
import { afterAll, beforeAll, expect, it, vi } from 'vitest';
import { requestUpgrade } from '../src/http/upgrade-request.test.helpers.js';
import {
  ADMIN_TOKEN,
  applyNodeService,
  describeOnDatabase,
  type HarnessServer,
  localBackendConfig,
  makeTempDir,
  startHarnessServer,
} from './server-harness.js';

// A real process starts and stops here; nothing is timed, the limits only catch hangs.
vi.setConfig({ testTimeout: 60_000, hookTimeout: 60_000 });

/** What the echo replica saw. */
interface Echo {
  url: string;
  authorization: string | null;
  realIp: string | null;
  forwardedFor: string | null;
}

/** The replica: answers every request, and every upgrade unswitched, with what it saw. */
const ECHO_SERVER_JS = String.raw`
const http = require('http');
const echo = (request) => JSON.stringify({
  url: request.url,
  authorization: request.headers.authorization || null,
  realIp: request.headers['x-real-ip'] || null,
  forwardedFor: request.headers['x-forwarded-for'] || null,
});
const server = http.createServer((request, response) => {
  request.resume();
  request.on('end', () => {
    response.writeHead(200, { 'content-type': 'application/json' });
    response.end(echo(request));
  });
});
server.on('upgrade', (request, socket) => {
  const body = echo(request);
  socket.end('HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: ' + Buffer.byteLength(body) + '\r\n\r\n' + body);
});
server.listen(Number(process.argv[2]), '127.0.0.1');
`;

describeOnDatabase('sqlite')(
  'the service proxy normalises paths for rate limits and keeps dstack tokens from services',
  () => {
    const temp = makeTempDir();
    let harness: HarnessServer;
    let outsiderToken: string;

    beforeAll(async () => {
      harness = await startHarnessServer({ dir: temp.dir, config: localBackendConfig(temp.dir) });
      outsiderToken = await harness.createUser('outsider');
      await applyNodeService(harness, {
        dir: temp.dir,
        name: 'open',
        script: ECHO_SERVER_JS,
        fields: {
          auth: false,
          rate_limits: [
            // One request per client key, then 429 for a minute: a second request shows which bucket it took.
            { prefix: '/limited', key: { type: 'header', header: 'x-client' }, rps: 1 / 60, burst: 0 },
            { prefix: '/v1/embeddings', key: { type: 'header', header: 'x-client' }, rps: 1 / 60, burst: 0 },
          ],
        },
      });
    });

    afterAll(async () => {
      await harness?.terminateFleetsAndClose();
      temp.remove();
    });

    /** `path` (under the service) exactly as written on the request line. */
    const get = (path: string, headers: Record<string, string> = {}) =>
      new Promise<{ status: number; body: string }>((resolve, reject) => {
        const request = httpRequest(`${harness.server.url}/proxy/services/main/open`, {
          path: `/proxy/services/main/open${path}`,
          headers,
        });
        request.on('response', (response) => {
          let body = '';
          response.setEncoding('utf8');
          response.on('data', (chunk: string) => {
            body += chunk;
          });
          response.on('end', () => resolve({ status: response.statusCode ?? 0, body }));
        });
        request.on('error', reject);
        request.end();
      });
    const echo = async (path: string, headers: Record<string, string> = {}) => {
      const answer = await get(path, headers);
      expect(answer.status, answer.body).toBe(200);
      return JSON.parse(answer.body) as Echo;
    };

    it.each([
      ['/%6cimited'],
      ['/%6Cimited/x'],
      ['//limited'],
      ['/./limited'],
      ['/x/../limited'],
      ['/%2e%2e/limited'],
      ['/limited?again=1'],
    ])('limits %s like /limited', async (variant) => {
      const client = { 'x-client': `client ${variant}` };
      expect((await get('/limited', client)).status).toBe(200);
      const limited = await get(variant, client);
      expect(limited.status, limited.body).toBe(429);
    });

    it('limits an encoded letter or an encoded slash under a longer prefix like the plain path', async () => {
      for (const variant of ['/v1/%65mbeddings', '/v1%2Fembeddings', '/V1/../v1/embeddings/']) {
        const client = { 'x-client': `client ${variant}` };
        expect((await get(variant, client)).status).toBe(200);
        expect((await get('/v1/embeddings', client)).status).toBe(429);
      }
      // Paths outside every prefix are not limited, however they are written.
      const client = { 'x-client': 'outside' };
      for (let index = 0; index < 3; index += 1) {
        expect((await get('/%6cimit', client)).status).toBe(200);
        expect((await get('/limited/../other', client)).status).toBe(200);
      }
    });

    it('forwards the path as the client wrote it', async () => {
      expect((await echo('/a/./b//%6c?q=%2F')).url).toBe('/a/./b//%6c?q=%2F');
    });

    it("drops a caller's dstack token before an auth: false service, and keeps the service's own key", async () => {
      for (const token of [ADMIN_TOKEN, outsiderToken]) {
        expect((await echo('/', { authorization: `Bearer ${token}` })).authorization).toBeNull();
        expect((await echo('/', { authorization: `bearer   ${token}` })).authorization).toBeNull();
      }
      expect((await echo('/', { authorization: 'Bearer app-key' })).authorization).toBe('Bearer app-key');

      const upgradeEcho = async (authorization: string) => {
        const answer = await requestUpgrade(`${harness.server.url}/proxy/services/main/open/ws`, {
          authorization,
        });
        if (answer.kind !== 'answered') throw new Error('The echo switched protocols');
        return JSON.parse(answer.body) as Echo;
      };
      expect((await upgradeEcho(`Bearer ${ADMIN_TOKEN}`)).authorization).toBeNull();
      expect((await upgradeEcho('Bearer app-key')).authorization).toBe('Bearer app-key');
    });

    it('sets X-Real-IP to its peer and appends it to X-Forwarded-For, whatever the client sent', async () => {
      const seen = await echo('/', { 'x-real-ip': '203.0.113.66', 'x-forwarded-for': '198.51.100.7' });
      expect(seen.realIp).toMatch(/^(::ffff:)?127\.0\.0\.1$|^::1$/);
      expect(seen.forwardedFor).toBe(`198.51.100.7, ${seen.realIp}`);

      const upgrade = await requestUpgrade(`${harness.server.url}/proxy/services/main/open/ws`, {
        'x-real-ip': '203.0.113.66',
      });
      if (upgrade.kind !== 'answered') throw new Error('The echo switched protocols');
      expect((JSON.parse(upgrade.body) as Echo).realIp).toBe(seen.realIp);
    });
  },
);
