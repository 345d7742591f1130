/**
 * End to end on the local backend: a project secret reaches a task's `env` through
 * `${{ secrets.NAME }}`, and its value is nowhere else: not in any text column of the database,
 * not in the logs, not in `runs/get` or `runs/list`.
 */
import { createHash } from 'node:crypto';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { ApiError, Run, RunPlan } from '@dstack/core';
import { sql } from 'kysely';
import { afterAll, beforeAll, expect, it, vi } from 'vitest';

vi.setConfig({ testTimeout: 60_000, hookTimeout: 60_000 });

import { generateAesKey } from '../src/security/encryption.js';
import {
  applyTask,
  describeEachDatabase,
  type HarnessServer,
  localBackendConfig,
  makeTempDir,
  startHarnessServer,
  task,
} from './server-harness.js';

/** A value no other part of a run could contain by chance. */
const SECRET_VALUE = `tok-${createHash('sha256').update(String(Math.random())).digest('hex').slice(0, 24)}`;
const SECRET_SHA256 = createHash('sha256').update(SECRET_VALUE).digest('hex');

/** Every text value of every table, as `table.column: value`. */
async function everyStoredText(harness: HarnessServer): Promise<string[]> {
  const db = harness.server.app.db;
  const tables = await db.introspection.getTables();
  const found: string[] = [];
  for (const table of tables) {
    // The tables of the migrator and of the database itself hold no run data.
    if (table.name.startsWith('kysely_')) continue;
    const rows = await db.selectFrom(sql.table(table.name).as('t')).selectAll().execute();
    for (const row of rows as Array<Record<string, unknown>>) {
      for (const [column, value] of Object.entries(row)) {
        if (typeof value !== 'string') continue;
        found.push(`${table.name}.${column}: ${value}`);
        // Log messages are stored as base64 of the job's bytes.
        if (table.name === 'job_logs' && column === 'message') {
          found.push(`${table.name}.${column} (decoded): ${Buffer.from(value, 'base64').toString('utf8')}`);
        }
      }
    }
  }
  return found;
}

/** Every regular file under `dir` whose bytes contain `needle` (the SQLite files and the instances' homes). */
function filesContaining(dir: string, needle: string): string[] {
  const found: string[] = [];
  for (const entry of readdirSync(dir, { withFileTypes: true, recursive: true })) {
    if (!entry.isFile()) continue;
    const path = join(entry.parentPath, entry.name);
    if (readFileSync(path).includes(needle)) found.push(path);
  }
  return found;
}

describeEachDatabase('secrets on the local backend', (databaseUrl, dialect) => {
  const temp = makeTempDir();
  let harness: HarnessServer;

  beforeAll(async () => {
    harness = await startHarnessServer({
      databaseUrl: databaseUrl(),
      dir: temp.dir,
      // As a new server writes its config.yml: an AES key encrypts the secrets.
      config: { ...localBackendConfig(temp.dir), encryption: { keys: [generateAesKey()] } },
    });
  });

  afterAll(async () => {
    await harness.terminateFleetsAndClose();
    temp.remove();
  });

  it('puts the secret in env at submit time and nowhere in the database, logs or API', async () => {
    const set = await harness.call('/api/project/main/secrets/create_or_update', {
      name: 'MY_TOKEN',
      value: SECRET_VALUE,
    });
    expect(set.status).toBe(200);
    const configuration = task('uses-secret', [
      `echo "length=\${#TOKEN}"`,
      'printf %s "$TOKEN" | sha256sum | cut -d" " -f1',
      'echo "plain=$PLAIN"',
    ]);
    const withEnv = { ...configuration, env: { TOKEN: `\${{ secrets.MY_TOKEN }}`, PLAIN: 'a$$b' } };

    const plan = await harness.call<RunPlan>('/api/project/main/runs/get_plan', {
      run_spec: { configuration: withEnv },
    });
    expect(plan.status).toBe(200);
    expect(plan.body.job_plans[0]?.job_spec.env.TOKEN).toBe(`\${{ secrets.MY_TOKEN }}`);

    await applyTask(harness, withEnv);
    const run = await harness.waitForRun('uses-secret', ['done', 'failed', 'terminated']);
    expect(run.status).toBe('done');
    // The job saw the value: its length and hash, printed by the job itself. `$$` is dstack's escape.
    expect(await harness.logs('uses-secret')).toBe(
      `length=${SECRET_VALUE.length}\n${SECRET_SHA256}\nplain=a$b\n`,
    );

    const got = await harness.call<Run>('/api/project/main/runs/get', { run_name: 'uses-secret' });
    const listed = await harness.call<Run[]>('/api/runs/list', { project_name: 'main' });
    expect(JSON.stringify(got.body.run_spec.configuration)).toContain(`\${{ secrets.MY_TOKEN }}`);
    for (const answer of [plan, got, listed]) expect(JSON.stringify(answer.body)).not.toContain(SECRET_VALUE);

    const stored = await everyStoredText(harness);
    expect(stored.some((text) => text.startsWith('secrets.value: enc:aes:'))).toBe(true);
    expect(
      stored.some((text) => text.startsWith('jobs.job_spec_data:') && text.includes('secrets.MY_TOKEN')),
    ).toBe(true);
    const base64 = Buffer.from(SECRET_VALUE).toString('base64').slice(0, 24);
    expect(stored.filter((text) => text.includes(SECRET_VALUE) || text.includes(base64))).toEqual([]);
    // Nor on disk: the server's directory holds the SQLite database (its WAL too) and the local
    // instances' homes (shim state and output).
    expect(filesContaining(temp.dir, SECRET_VALUE)).toEqual([]);
    // The scan does read the database: its file names the secret's encrypted row.
    if (dialect === 'sqlite') expect(filesContaining(temp.dir, 'MY_TOKEN').length).toBeGreaterThan(0);
  });

  it('refuses a run naming an unknown secret at plan and apply, naming the env key and the secret', async () => {
    const configuration = {
      ...task('unknown-secret', ['true']),
      env: { HF_TOKEN: `\${{ secrets.no_such_secret }}` },
    };
    for (const [path, body] of [
      ['/api/project/main/runs/get_plan', { run_spec: { configuration } }],
      ['/api/project/main/runs/apply', { plan: { run_spec: { configuration } } }],
    ] as const) {
      const answer = await harness.call<ApiError>(path, body);
      expect(answer.status, path).toBe(400);
      expect(answer.body.detail[0]?.msg, path).toMatch(
        /^env\.HF_TOKEN: secret "no_such_secret" does not exist/,
      );
      expect(answer.body.detail[0]?.fields, path).toEqual([['run_spec', 'configuration', 'env', 'HF_TOKEN']]);
    }
    // Nothing was stored or provisioned.
    const got = await harness.call('/api/project/main/runs/get', { run_name: 'unknown-secret' });
    expect(got.status).toBe(400);
  });
});
