/**
 * The web console in a real browser (Debian's Chromium driven by playwright-core) against a real
 * server with the local backend: sign-in with a token, a run applied by the built CLI appears
 * with its live logs and events, Stop in the page ends it and Delete removes it, the other pages
 * show fleets, projects, members, backends, secret names, offers and users, and a plain user sees
 * no admin page. Screenshots of the main pages go to `test-output/web-console/` (or
 * `$DSTACK_TEST_OUTPUT_DIR/web-console/`).
 *
 * One server and one browser serve every case: starting Chromium costs about a second.
 */
import { existsSync, mkdirSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { Run } from '@dstack/core';
import { type Browser, chromium, type Page } from 'playwright-core';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { stringify } from 'yaml';
import { killRunningDstack, requireBuiltDstack, runDstack } from './dstack-cli.js';
import {
  ADMIN_TOKEN,
  type HarnessServer,
  HOST_RESOURCES,
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
const REPOSITORY_ROOT = resolve(fileURLToPath(new URL('../../..', import.meta.url)));
const SCREENSHOTS = join(
  process.env.DSTACK_TEST_OUTPUT_DIR ?? join(REPOSITORY_ROOT, 'test-output'),
  'web-console',
);
/** Generous for a shared 2-core machine: a job's first lines come after its shim and runner start. */
const UI_TIMEOUT_MS = 60_000;
const RUN_NAME = 'web-console-task';
const SECRET_NAME = 'hf_token';
const SECRET_VALUE = 'secret-value-never-shown';

const DESKTOP = { width: 1280, height: 800 };
/** An iPhone-sized screen: the console must be usable there. */
const PHONE = { width: 390, height: 844 };

if (!CHROMIUM && process.env.CI) {
  // CI installs Chromium (.ci/run): a missing one is a broken setup, not a reason to skip.
  throw new Error('Chromium is missing (apt-get install chromium); .ci/run installs it');
}

if (!CHROMIUM) {
  describe('the web console in Chromium', () => {
    it.skip('needs Chromium: apt-get install chromium (or DSTACK_TEST_CHROMIUM=/path/to/chrome)', () => {});
  });
}

describe.skipIf(!CHROMIUM)('the web console in Chromium', { timeout: UI_TIMEOUT_MS }, () => {
  const temp = makeTempDir('dstack-web-console-');
  const cliEnvironment = { DSTACK_CLI_CONFIG_DIR: join(temp.dir, 'cli') };
  let harness: HarnessServer;
  let browser: Browser;
  let userToken: string;

  beforeAll(async () => {
    requireBuiltDstack();
    mkdirSync(SCREENSHOTS, { recursive: true });
    harness = await startHarnessServer({
      dir: join(temp.dir, 'server'),
      config: localBackendConfig(temp.dir),
      // A sample a second, so the run's charts fill within the test's few seconds (dstack's 10 s otherwise).
      env: { DSTACK_SERVER_METRICS_COLLECT_INTERVAL: '1' },
    });
    mkdirSync(cliEnvironment.DSTACK_CLI_CONFIG_DIR, { recursive: true });
    writeFileSync(
      join(cliEnvironment.DSTACK_CLI_CONFIG_DIR, 'config.yml'),
      stringify({ projects: [{ name: 'main', url: harness.server.url, token: ADMIN_TOKEN, default: true }] }),
    );
    userToken = await harness.createUser('plain-user');
    const secret = await harness.call('/api/project/main/secrets/create_or_update', {
      name: SECRET_NAME,
      value: SECRET_VALUE,
    });
    expect(secret.status).toBe(200);
    browser = await chromium.launch({ executablePath: CHROMIUM, args: ['--no-sandbox'] });
  }, UI_TIMEOUT_MS);

  afterAll(async () => {
    await browser?.close();
    killRunningDstack();
    await harness?.terminateFleetsAndClose();
    temp.remove();
  }, UI_TIMEOUT_MS);

  /** What Chromium refused to load or run on the console's pages because of its policy: nothing, ever. */
  const policyViolations: string[] = [];
  afterEach(() => {
    expect(policyViolations).toEqual([]);
  });

  /** A fresh browser profile (own localStorage; closed with the browser), signed in with `token` unless null. */
  async function openConsole(token: string | null, viewport = DESKTOP): Promise<Page> {
    const context = await browser.newContext({ viewport });
    const page = await context.newPage();
    page.setDefaultTimeout(UI_TIMEOUT_MS);
    page.on('console', (message) => {
      if (/Content Security Policy/i.test(message.text())) policyViolations.push(message.text());
    });
    await page.goto(`${harness.server.url}/`);
    if (token !== null) {
      await page.fill('#token', token);
      await page.click('button[type=submit]');
      await page.getByTestId('username').waitFor();
    }
    return page;
  }

  /** How far the page is wider than the window (a string: this file is compiled without the DOM's types). */
  const horizontalOverflow = async (page: Page) =>
    (await page.evaluate(
      'document.documentElement.scrollWidth - document.documentElement.clientWidth',
    )) as number;

  /** The app's own box: as tall as its content, not the window. */
  const screenshot = (page: Page, name: string) =>
    page.locator('#root').screenshot({ path: join(SCREENSHOTS, `${name}.png`) });

  it('is served at / by the server, beside the API', async () => {
    expect(harness.server.webConsole).toBe(true);
    const index = await fetch(`${harness.server.url}/runs/main/anything`);
    expect(index.headers.get('content-type')).toBe('text/html; charset=utf-8');
    expect(await index.text()).toContain('<div id="root">');
    const api = await fetch(`${harness.server.url}/api/no/such/route`);
    expect(api.status).toBe(404);
    expect(api.headers.get('content-type')).toContain('application/json');
  });

  it('denies framing: its pages say so, and Chromium shows no console in a frame of another site', async () => {
    for (const path of ['/', '/runs/main/anything']) {
      const answer = await fetch(`${harness.server.url}${path}`);
      expect(answer.headers.get('x-frame-options')).toBe('DENY');
      expect(answer.headers.get('content-security-policy')).toContain("frame-ancestors 'none'");
    }
    // Another site (its own port: another origin) embeds the console in a frame.
    const consoleUrl = `${harness.server.url}/runs`;
    const framing = createServer((_request, response) => {
      response.writeHead(200, { 'content-type': 'text/html; charset=utf-8' });
      response.end(`<!doctype html><title>framing</title><iframe src="${consoleUrl}"></iframe>`);
    });
    await new Promise<void>((resolve) => framing.listen(0, '127.0.0.1', resolve));
    const refusals: string[] = [];
    const page = await browser.newPage();
    try {
      page.on('console', (message) => refusals.push(message.text()));
      const loaded = page.waitForEvent('framenavigated', (frame) => frame !== page.mainFrame());
      await page.goto(`http://127.0.0.1:${(framing.address() as AddressInfo).port}/`);
      const frame = await loaded;
      // Chromium puts its error page in the frame's place; the console's document never loads there.
      await expect
        .poll(() => refusals.join('\n'), { timeout: UI_TIMEOUT_MS })
        .toContain("frame-ancestors 'none'");
      expect(frame.url()).not.toBe(consoleUrl);
      expect(await frame.locator('#root').count()).toBe(0);
    } finally {
      await page.close();
      await new Promise((resolve) => framing.close(resolve));
    }
  });

  it('signs in with the token, refuses a wrong one, and stays signed in after a reload', async () => {
    const page = await openConsole(null);
    await screenshot(page, 'sign-in');
    await page.fill('#token', 'not-a-token');
    await page.click('button[type=submit]');
    await page.locator('.sign-in .error').waitFor();
    await page.fill('#token', ADMIN_TOKEN);
    await page.click('button[type=submit]');
    await expect.poll(() => page.getByTestId('username').textContent()).toBe('admin');
    // The console moves to /runs after the render that shows the user: wait for it, not assume it.
    await expect.poll(() => new URL(page.url()).pathname).toBe('/runs');
    await page.reload();
    await expect.poll(() => page.getByTestId('username').textContent()).toBe('admin');
    await page.getByRole('button', { name: 'Sign out' }).click();
    await page.locator('#token').waitFor();
  });

  it('shows a run applied from the CLI with its live logs and events; Stop in the page ends it, Delete removes it', async () => {
    const configuration = join(temp.dir, 'web-console.dstack.yml');
    writeFileSync(
      configuration,
      stringify({
        type: 'task',
        name: RUN_NAME,
        commands: [
          'echo hello-from-the-console',
          'i=0; while true; do i=$((i+1)); echo tick-$i; sleep 0.5; done',
        ],
        resources: HOST_RESOURCES,
      }),
    );
    const applied = await runDstack(['apply', '-f', configuration, '-y', '-d'], {
      env: cliEnvironment,
      cwd: temp.dir,
    });
    expect(applied.stderr).toBe('');
    expect(applied.code).toBe(0);

    const page = await openConsole(ADMIN_TOKEN);
    const row = page.locator(`tr[data-run="${RUN_NAME}"]`);
    await row.waitFor();
    await row.locator('[data-status="running"]').waitFor();
    expect(await row.textContent()).toContain('main');
    await screenshot(page, 'runs');

    await row.getByRole('link', { name: RUN_NAME }).click();
    const logs = page.getByTestId('run-logs');
    await logs.filter({ hasText: 'hello-from-the-console' }).waitFor();
    // Lines keep coming while the page is open: the stream is followed, not read once.
    await logs.filter({ hasText: 'tick-4' }).waitFor();
    await expect.poll(() => page.getByTestId('run-cost').textContent()).toMatch(/^\$\d/);
    // The job's CPU and memory as charts, redrawn while it runs: the lines gain points.
    const cpuLine = page.getByTestId('metric-cpu').locator('polyline');
    const memoryLine = page.getByTestId('metric-memory').locator('polyline');
    // Attached, not visible: a flat line has an empty box, which Playwright calls hidden.
    await memoryLine.waitFor({ state: 'attached' });
    const pointsOf = async (line: typeof cpuLine) => Number(await line.getAttribute('data-points'));
    const firstCount = await pointsOf(memoryLine);
    await expect.poll(() => pointsOf(memoryLine), { timeout: UI_TIMEOUT_MS }).toBeGreaterThan(firstCount);
    await cpuLine.waitFor({ state: 'attached' });
    expect(await page.getByTestId('metric-memory').textContent()).toMatch(/Memory\d+(\.\d)?[KMG]?B/);
    // No GPU on this host's job: no GPU chart rather than zeros.
    expect(await page.getByTestId('metric-gpu-utilization').count()).toBe(0);
    // The run's events: its submission by the user who applied it, and the system's status changes.
    const events = page.getByTestId('run-events').locator('tr[data-event]');
    const submitted = events.filter({ hasText: 'Run submitted' });
    await submitted.waitFor();
    expect(await submitted.textContent()).toContain('admin');
    const running = events.filter({ hasText: 'status changed' }).filter({ hasText: '-> RUNNING' }).first();
    await running.waitFor();
    expect(await running.textContent()).toContain('system');
    await screenshot(page, 'run');

    // On a phone-sized screen wide tables scroll inside their box; the page never scrolls sideways.
    const phone = await openConsole(ADMIN_TOKEN, PHONE);
    await phone.locator(`tr[data-run="${RUN_NAME}"]`).waitFor();
    expect(await horizontalOverflow(phone)).toBeLessThanOrEqual(0);
    await screenshot(phone, 'runs-phone');
    await phone.getByRole('link', { name: RUN_NAME }).click();
    await phone.getByTestId('run-logs').filter({ hasText: 'hello-from-the-console' }).waitFor();
    expect(await horizontalOverflow(phone)).toBeLessThanOrEqual(0);
    await screenshot(phone, 'run-phone');

    await page.getByRole('button', { name: 'Stop' }).click();
    await page.locator('.facts [data-status="terminated"]').waitFor();
    // Events are read once more when the run ends: its last change is listed.
    await events.filter({ hasText: 'Run status changed' }).filter({ hasText: '-> TERMINATED' }).waitFor();
    await page.getByTestId('logs-state').filter({ hasText: 'The run is finished.' }).waitFor();
    const run = (await harness.call<Run>('/api/project/main/runs/get', { run_name: RUN_NAME })).body;
    expect(run.status).toBe('terminated');
    expect(run.termination_reason).toBe('stopped_by_user');

    // Delete asks first; accepted, the run is gone from the list and from the API.
    page.once('dialog', (dialog) => void dialog.accept());
    await page.getByRole('button', { name: 'Delete' }).click();
    await page.getByRole('heading', { name: 'Runs' }).waitFor();
    await expect.poll(() => page.locator(`tr[data-run="${RUN_NAME}"]`).count()).toBe(0);
    const deleted = await harness.call('/api/project/main/runs/get', { run_name: RUN_NAME });
    // dstack's answer for a missing resource.
    expect(deleted.status).toBe(400);
  }, 180_000);

  it('shows fleets with their instances, projects with members, backends and secret names, offers, and users', async () => {
    const page = await openConsole(ADMIN_TOKEN);
    await page.getByRole('link', { name: 'Fleets' }).click();
    await page.locator('article[data-fleet]').first().waitFor();
    await screenshot(page, 'fleets');

    await page.getByRole('link', { name: 'Projects' }).click();
    await page.getByRole('link', { name: 'main' }).click();
    await page.getByRole('cell', { name: SECRET_NAME }).waitFor();
    await page.getByRole('cell', { name: 'admin', exact: true }).first().waitFor();
    expect(await page.content()).not.toContain(SECRET_VALUE);
    await page.getByRole('cell', { name: 'local', exact: true }).waitFor();
    await screenshot(page, 'project');

    await page.getByRole('link', { name: 'Offers' }).click();
    await page.fill('input[name=gpu]', 'not-a-gpu-spec:xx');
    await page.getByRole('button', { name: 'Search' }).click();
    await expect.poll(() => page.locator('p.error').textContent()).toMatch(/gpu/);
    await page.fill('input[name=gpu]', '');
    await page.getByRole('button', { name: 'Search' }).click();
    await page.getByRole('cell', { name: 'local', exact: true }).first().waitFor();
    await expect.poll(() => page.getByTestId('offers-total').textContent()).toMatch(/^[1-9]\d* of/);
    await screenshot(page, 'offers');

    await page.getByRole('link', { name: 'Users' }).click();
    await page.getByRole('cell', { name: 'plain-user' }).waitFor();
    await screenshot(page, 'users');
  });

  it('manages projects, members, backends, secrets and users through their forms', async () => {
    const page = await openConsole(ADMIN_TOKEN);
    page.on('dialog', (dialog) => void dialog.accept());

    // A secret set in the page: its name is listed, its value never comes back.
    await page.goto(`${harness.server.url}/projects/main`);
    const form = page.getByRole('form', { name: 'Set secret' });
    await form.locator('input[name=secret_name]').fill('console_secret');
    await form.locator('input[name=secret_value]').fill('typed-value-never-shown');
    await form.getByRole('button', { name: 'Set secret' }).click();
    await page.locator('tr[data-secret="console_secret"]').waitFor();
    expect(await form.locator('input[name=secret_value]').inputValue()).toBe('');
    expect(await page.content()).not.toContain('typed-value-never-shown');
    const stored = await harness.call<{ value: string }>('/api/project/main/secrets/get', {
      name: 'console_secret',
    });
    expect(stored.body.value).toBe('typed-value-never-shown');
    await page.locator('tr[data-secret="console_secret"]').getByRole('button', { name: 'Delete' }).click();
    await expect.poll(() => page.locator('tr[data-secret="console_secret"]').count()).toBe(0);

    // A member added, given another role, and removed.
    const addMember = page.getByRole('form', { name: 'Add member' });
    await addMember.locator('input[name=member]').fill('plain-user');
    await addMember.getByRole('button', { name: 'Add member' }).click();
    const member = page.locator('tr[data-member="plain-user"]');
    await member.getByLabel('Role of plain-user').selectOption('manager');
    await expect
      .poll(async () => {
        const project = await harness.call<{
          members: Array<{ user: { username: string }; project_role: string }>;
        }>('/api/projects/main/get');
        return project.body.members.find((listed) => listed.user.username === 'plain-user')?.project_role;
      })
      .toBe('manager');
    await member.getByRole('button', { name: 'Remove' }).click();
    await expect.poll(() => member.count()).toBe(0);

    // A project created, given a backend (its settings typed as JSON), and deleted.
    await page.getByRole('link', { name: 'Projects' }).click();
    await page.fill('input[name=project_name]', 'console-project');
    await page.getByRole('button', { name: 'Create' }).click();
    await page.getByRole('heading', { name: 'console-project' }).waitFor();
    await page.getByText('Your role: admin').waitFor();
    const addBackend = page.getByRole('form', { name: 'Add backend' });
    await addBackend.locator('select[name=backend_type]').selectOption('local');
    await addBackend.locator('textarea').fill('not json');
    await addBackend.getByRole('button', { name: 'Add backend' }).click();
    await page.getByText('Settings: not JSON').waitFor();
    await addBackend
      .locator('textarea')
      .fill(JSON.stringify({ instances_dir: join(temp.dir, 'console-project-instances') }));
    await addBackend.getByRole('button', { name: 'Add backend' }).click();
    await page.locator('tr[data-backend="local"]').waitFor();
    await screenshot(page, 'project-forms');
    await page.locator('tr[data-backend="local"]').getByRole('button', { name: 'Remove' }).click();
    await expect.poll(() => page.locator('tr[data-backend="local"]').count()).toBe(0);
    await page.getByRole('button', { name: 'Delete project' }).click();
    await page.getByRole('heading', { name: 'Projects' }).waitFor();
    await expect.poll(() => page.locator('tr[data-project]').count()).toBeGreaterThan(0);
    expect(await page.locator('tr[data-project="console-project"]').count()).toBe(0);

    // A user created: the token is shown once and signs in; deactivated, it no longer does.
    await page.getByRole('link', { name: 'Users' }).click();
    await page.fill('input[name=username]', 'console-user');
    await page.getByRole('button', { name: 'Create' }).click();
    const token = (await page.getByTestId('new-user-token').locator('code').textContent()) ?? '';
    expect(token).not.toBe('');
    expect((await harness.call('/api/users/get_my_user', undefined, token)).status).toBe(200);
    await screenshot(page, 'users-new');
    await page.locator('tr[data-user="console-user"]').getByRole('button', { name: 'Deactivate' }).click();
    await page.locator('tr[data-user="console-user"]').getByRole('button', { name: 'Activate' }).waitFor();
    expect((await harness.call('/api/users/get_my_user', undefined, token)).status).toBe(403);
    await page.reload();
    await page.locator('tr[data-user="console-user"]').waitFor();
    expect(await page.getByTestId('new-user-token').count()).toBe(0);

    // The project page with its forms fits a phone's width too.
    const phone = await openConsole(ADMIN_TOKEN, PHONE);
    await phone.goto(`${harness.server.url}/projects/main`);
    await phone.getByRole('form', { name: 'Add backend' }).waitFor();
    expect(await horizontalOverflow(phone)).toBeLessThanOrEqual(0);
    await screenshot(phone, 'project-phone');
  });

  it('shows a plain user no admin page, and signs out a token refused later', async () => {
    const page = await openConsole(userToken);
    expect(await page.getByTestId('username').textContent()).toBe('plain-user');
    expect(await page.getByRole('link', { name: 'Users' }).count()).toBe(0);
    await page.goto(`${harness.server.url}/users`);
    await page.getByText('Only global admins manage users.').waitFor();
    expect(await page.getByRole('cell', { name: 'admin', exact: true }).count()).toBe(0);
    // Not a member of main: its runs are not the user's to see.
    await page.goto(`${harness.server.url}/runs`);
    await page.getByText('No runs yet').waitFor();

    // A token replaced elsewhere signs the page out at its next call.
    const refreshed = await harness.call('/api/users/refresh_token', { username: 'plain-user' });
    expect(refreshed.status).toBe(200);
    await page.getByRole('link', { name: 'Projects' }).click();
    await page.locator('#token').waitFor();
    expect(await page.evaluate('localStorage.getItem("dstack.token")')).toBeNull();
  });
});
