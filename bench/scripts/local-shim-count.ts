/**
 * Counts the local shims that N quick tasks make on this host: applied at once (`par`), then one
 * after another (`seq`), or both. Each task asks for `cpu: 1..`, `memory: 0.5GB..` and waits for
 * capacity (`retry: {on_events: [no-capacity]}`) unless `no-retry` is given.
 * Usage: pnpm exec tsx scripts/local-shim-count.ts [N=30] [par|seq|both] [no-retry]
 */
import { mkdtemp, readdir, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { startServer } from '@dstack/server';

const N = Number(process.argv[2] ?? 30);
const MODE = process.argv[3] ?? 'both';
const RETRY = process.argv[4] === 'no-retry' ? {} : { retry: { on_events: ['no-capacity'], duration: '1h' } };
const TOKEN = 't';
const dir = await mkdtemp(path.join(tmpdir(), 'localcap-count-'));
const instancesDir = path.join(dir, 'instances');
const server = await startServer({
  env: { DSTACK_SERVER_DIR: dir, DSTACK_SERVER_ADMIN_TOKEN: TOKEN },
  port: 0,
  config: { projects: [{ name: 'main', backends: [{ type: 'local', instances_dir: instancesDir }] }] },
});
// biome-ignore lint/suspicious/noExplicitAny: a quick script reading a few fields of the answers
async function call(route: string, body: unknown): Promise<any> {
  const r = await fetch(server.url + route, {
    method: 'POST',
    headers: { authorization: `Bearer ${TOKEN}`, 'content-type': 'application/json' },
    body: JSON.stringify(body),
  });
  const t = await r.text();
  if (!r.ok) throw new Error(`${route} ${r.status} ${t}`);
  return t ? JSON.parse(t) : null;
}
async function liveShims(): Promise<number> {
  let n = 0;
  for (const e of await readdir(instancesDir).catch(() => [] as string[])) {
    try {
      const rec = JSON.parse(await readFile(path.join(instancesDir, e, 'launch.json'), 'utf8'));
      const pid = JSON.parse(rec.provisioning_data.backend_data).pid;
      const cmd = await readFile(`/proc/${pid}/cmdline`, 'utf8');
      if (cmd.includes(path.join(instancesDir, e))) n++;
    } catch {}
  }
  return n;
}
const task = (name: string) => ({
  type: 'task',
  name,
  commands: ['true'],
  resources: { cpu: '1..', memory: '0.5GB..', disk: '1GB..' },
  ...RETRY,
});
async function waitAll(names: string[], peak: { v: number }) {
  for (;;) {
    peak.v = Math.max(peak.v, await liveShims());
    const rows = await server.app.db
      .selectFrom('runs')
      .select(['run_name', 'status'])
      .where('run_name', 'in', names)
      .execute();
    if (rows.filter((r) => ['done', 'failed', 'terminated'].includes(r.status)).length === names.length)
      return rows;
    await new Promise((r) => setTimeout(r, 200));
  }
}
const instancesCount = async () =>
  Number(
    (
      await server.app.db
        .selectFrom('instances')
        .select((eb) => eb.fn.countAll().as('c'))
        .executeTakeFirstOrThrow()
    ).c,
  );
try {
  if (MODE !== 'seq') {
    const names = Array.from({ length: N }, (_, i) => `par-${i}`);
    const t0 = Date.now();
    await Promise.all(
      names.map((n) =>
        call('/api/project/main/runs/apply', { plan: { run_spec: { configuration: task(n) } } }),
      ),
    );
    const peak = { v: 0 };
    const rows = await waitAll(names, peak);
    const statuses: Record<string, number> = {};
    for (const r of rows) statuses[r.status] = (statuses[r.status] ?? 0) + 1;
    console.log(
      `${N} at once: peak live shims ${peak.v}, instances made ${await instancesCount()}, statuses ${JSON.stringify(statuses)}, ${((Date.now() - t0) / 1000).toFixed(1)} s`,
    );
  }
  if (MODE !== 'par') {
    const before = await instancesCount();
    const peak = { v: 0 };
    for (let i = 0; i < N; i++) {
      const name = `seq-${i}`;
      await call('/api/project/main/runs/apply', { plan: { run_spec: { configuration: task(name) } } });
      await waitAll([name], peak);
    }
    console.log(
      `${N} one after another: peak live shims ${peak.v}, instances made ${(await instancesCount()) - before}`,
    );
  }
} finally {
  const fleets = await call('/api/project/main/fleets/list', {});
  if (fleets.length)
    await call('/api/project/main/fleets/delete', { names: fleets.map((f: { name: string }) => f.name) });
  for (let i = 0; i < 300 && (await call('/api/project/main/fleets/list', {})).length > 0; i++)
    await new Promise((r) => setTimeout(r, 100));
  await server.close();
  await rm(dir, { recursive: true, force: true });
}
