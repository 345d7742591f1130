/**
 * The volume API and pipeline on both databases, with the local backend (volumes are
 * directories): `submitted` → `provisioning` → `active` or `failed`, registering an existing
 * directory (never another project's), names unique per project, deletion refused while a job holds the volume (naming
 * the run), `auto_cleanup_duration`, and runs refused at plan time when their volumes cannot be
 * mounted (a missing volume, the process runtime).
 */
import { randomUUID } from 'node:crypto';
import { existsSync, mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Volume } from '@dstack/core';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { allRoutes } from '../api-routes.js';
import { Pipeline } from '../pipelines/pipeline.js';
import { createTestApp, type TestApp } from '../testing/test-app.test.helpers.js';
import { describeEachDialect } from '../testing/test-database.test.helpers.js';
import { volumePipeline } from './volume-pipeline.js';

describeEachDialect('volumes API and pipeline', (getDb) => {
  let server: TestApp;
  let temp: string;
  let volumesDir: string;

  beforeAll(async () => {
    temp = mkdtempSync(join(tmpdir(), 'dstack-volumes-unit-'));
    volumesDir = join(temp, 'volumes');
    server = await createTestApp({
      dialect: getDb().dialect,
      routes: allRoutes,
      config: {
        projects: [
          {
            name: 'main',
            backends: [{ type: 'local', instances_dir: join(temp, 'instances'), volumes_dir: volumesDir }],
          },
          {
            // Another tenant on the same host: its local backend keeps volumes in the same directory.
            name: 'other',
            backends: [{ type: 'local', instances_dir: join(temp, 'instances'), volumes_dir: volumesDir }],
          },
        ],
      },
    });
  });

  afterAll(async () => {
    await server?.close();
    rmSync(temp, { recursive: true, force: true });
  });

  async function processVolumes(): Promise<void> {
    await new Pipeline(server.app, volumePipeline(server.app)).processDue();
  }

  async function create(configuration: Record<string, unknown>, project = 'main') {
    return server.request(`/api/project/${project}/volumes/create`, {
      configuration: { type: 'volume', backend: 'local', region: 'local', ...configuration },
    });
  }

  async function get(name: string): Promise<Volume> {
    const answer = await server.request('/api/project/main/volumes/get', { name });
    expect(answer.status, JSON.stringify(answer.body)).toBe(200);
    return answer.body as Volume;
  }

  it('creates a volume: submitted, then active with its directory', async () => {
    const created = await create({ name: 'vol-a', size: '5GB' });
    expect(created.status, JSON.stringify(created.body)).toBe(200);
    expect(created.body).toMatchObject({
      name: 'vol-a',
      status: 'submitted',
      external: false,
      project_name: 'main',
    });
    await processVolumes();
    const volume = await get('vol-a');
    expect(volume.status).toBe('active');
    // The local backend is dstack's `remote` on the wire.
    expect(volume.provisioning_data).toMatchObject({ backend: 'remote', size_gb: 5, attachable: true });
    expect(existsSync(join(volumesDir, volume.volume_id as string))).toBe(true);
    const listed = await server.request('/api/project/main/volumes/list', {});
    expect(listed.body.map((entry: Volume) => entry.name)).toContain('vol-a');
    const global = await server.request('/api/volumes/list', { project_name: 'main' });
    expect(global.body.map((entry: Volume) => entry.name)).toContain('vol-a');
  });

  it('refuses a second volume of the same name, and a backend the project lacks', async () => {
    const again = await create({ name: 'vol-a', size: '5GB' });
    expect(again.status).toBe(400);
    expect(again.body.detail[0]).toMatchObject({
      code: 'resource_exists',
      msg: 'Volume vol-a already exists',
    });
    const elsewhere = await create({ name: 'vol-aws', backend: 'aws', region: 'us-east-1', size: 10 });
    expect(elsewhere.status).toBe(400);
    expect(elsewhere.body.detail[0].msg).toContain('backend aws is not configured in the project');
    expect(elsewhere.body.detail[0].fields).toEqual([['configuration', 'backend']]);
    const neither = await create({ name: 'vol-empty' });
    expect(neither.status).toBe(400);
    expect(JSON.stringify(neither.body)).toContain("either 'size'");
  });

  it('registers an existing directory (volume_id), fails a missing one, and never deletes a registered one', async () => {
    mkdirSync(join(volumesDir, 'kept-data'), { recursive: true });
    expect((await create({ name: 'vol-ext', volume_id: 'kept-data' })).status).toBe(200);
    expect((await create({ name: 'vol-missing', volume_id: 'no-such-dir' })).status).toBe(200);
    await processVolumes();
    const registered = await get('vol-ext');
    expect(registered).toMatchObject({ status: 'active', external: true, volume_id: 'kept-data' });
    const missing = await get('vol-missing');
    expect(missing.status).toBe('failed');
    expect(missing.status_message).toContain('registering the volume failed: no local volume "no-such-dir"');
    expect(
      (await server.request('/api/project/main/volumes/delete', { names: ['vol-ext', 'vol-missing'] }))
        .status,
    ).toBe(200);
    expect(existsSync(join(volumesDir, 'kept-data'))).toBe(true);
    expect((await server.request('/api/project/main/volumes/get', { name: 'vol-ext' })).status).toBe(400);
  });

  it("refuses another project's registration of a project's volume directory, naming volume_id", async () => {
    expect((await create({ name: 'vol-owned', size: 1 })).status).toBe(200);
    mkdirSync(join(volumesDir, 'main-data'), { recursive: true });
    expect((await create({ name: 'vol-main-data', volume_id: 'main-data' })).status).toBe(200);
    await processVolumes();
    const owned = await get('vol-owned');
    for (const volumeId of [owned.volume_id as string, 'main-data']) {
      const stolen = await create({ name: 'vol-stolen', volume_id: volumeId }, 'other');
      expect(stolen.status, JSON.stringify(stolen.body)).toBe(400);
      expect(stolen.body.detail[0].fields).toEqual([['configuration', 'volume_id']]);
      expect(stolen.body.detail[0].msg).toBe(
        `volume_id ${volumeId} is a volume of another project: a local volume's directory belongs to one project`,
      );
    }
    // The owner may register its own directory again; another project's own volumes are its own.
    const again = await create({ name: 'vol-owned-again', volume_id: owned.volume_id });
    expect(again.status, JSON.stringify(again.body)).toBe(200);
    expect((await create({ name: 'vol-theirs', size: 1 }, 'other')).status).toBe(200);
    await processVolumes();
    const theirs = (await server.request('/api/project/other/volumes/get', { name: 'vol-theirs' }))
      .body as Volume;
    expect(theirs.status).toBe('active');
    // Deleting a volume removes the directory it created, and nothing of the other project.
    const deleted = await server.request('/api/project/other/volumes/delete', { names: ['vol-theirs'] });
    expect(deleted.status).toBe(200);
    expect(existsSync(join(volumesDir, theirs.volume_id as string))).toBe(false);
    expect(existsSync(join(volumesDir, owned.volume_id as string))).toBe(true);
    expect(existsSync(join(volumesDir, 'main-data'))).toBe(true);
    // Once the owner forgets a registered directory, another project may register it.
    await server.request('/api/project/main/volumes/delete', { names: ['vol-main-data'] });
    expect((await create({ name: 'vol-adopted', volume_id: 'main-data' }, 'other')).status).toBe(200);
  });

  it('refuses to delete a volume a job holds, naming the run, and deletes it once detached', async () => {
    expect((await create({ name: 'vol-held', size: 1 })).status).toBe(200);
    await processVolumes();
    const volume = await get('vol-held');
    const { db } = server.app;
    const project = await db
      .selectFrom('projects')
      .select('id')
      .where('name', '=', 'main')
      .executeTakeFirstOrThrow();
    const instanceId = randomUUID();
    const jobId = randomUUID();
    const now = Date.now();
    await db
      .insertInto('instances')
      .values({
        id: instanceId,
        project_id: project.id,
        fleet_id: null,
        name: 'holder-0',
        instance_num: 0,
        status: 'busy',
        unreachable: 0,
        termination_reason: null,
        termination_reason_message: null,
        created_at: now,
        last_processed_at: now,
        started_at: null,
        finished_at: null,
        backend: 'local',
        region: 'local',
        price: 0,
        offer: null,
        job_provisioning_data: null,
        requirements: null,
        instance_configuration: null,
        termination_idle_time: null,
        termination_deadline: null,
        provisioning_deadline: null,
        first_termination_retry_at: null,
        last_termination_retry_at: null,
        idle_since: null,
        total_blocks: 1,
        busy_blocks: 1,
        deleted: 0,
        lock_expires_at: null,
        lock_token: null,
        lock_owner: null,
      })
      .execute();
    await db
      .insertInto('jobs')
      .values({
        id: jobId,
        project_id: project.id,
        run_id: randomUUID(),
        run_name: 'training-run',
        job_num: 0,
        replica_num: 0,
        job_name: 'training-run-0-0',
        submission_num: 0,
        status: 'running',
        termination_reason: null,
        termination_reason_message: null,
        exit_status: null,
        job_spec_data: '{}',
        job_provisioning_data: null,
        job_runtime_data: null,
        instance_id: instanceId,
        instance_assigned: 1,
        submitted_at: now,
        last_processed_at: now,
        finished_at: null,
        runner_timestamp: null,
        remove_at: null,
        disconnected_at: null,
        inactivity_secs: null,
        lock_expires_at: null,
        lock_token: null,
        lock_owner: null,
      })
      .execute();
    await db
      .insertInto('volume_attachments')
      .values({
        volume_id: volume.id,
        instance_id: instanceId,
        job_id: jobId,
        attachment_data: null,
        created_at: now,
        detach_requested_at: null,
      })
      .execute();
    expect((await get('vol-held')).attachments).toEqual([
      {
        instance: { name: 'holder-0', fleet_name: null, instance_num: 0, instance_id: null },
        attachment_data: null,
      },
    ]);
    const refused = await server.request('/api/project/main/volumes/delete', { names: ['vol-held'] });
    expect(refused.status).toBe(400);
    expect(refused.body.detail[0].msg).toBe(
      'Failed to delete volume vol-held: it is attached to run training-run (instance holder-0); stop the run first',
    );
    expect(existsSync(join(volumesDir, volume.volume_id as string))).toBe(true);

    await db.deleteFrom('volume_attachments').where('volume_id', '=', volume.id).execute();
    expect((await server.request('/api/project/main/volumes/delete', { names: ['vol-held'] })).status).toBe(
      200,
    );
    expect(existsSync(join(volumesDir, volume.volume_id as string))).toBe(false);
    const row = await db
      .selectFrom('volumes')
      .selectAll()
      .where('id', '=', volume.id)
      .executeTakeFirstOrThrow();
    expect(row).toMatchObject({ deleted: 1, to_be_deleted: 1 });
  });

  it('deletes an active volume unused for its auto_cleanup_duration, and keeps a younger one', async () => {
    expect((await create({ name: 'vol-idle', size: 1, auto_cleanup_duration: '1h' })).status).toBe(200);
    expect((await create({ name: 'vol-young', size: 1, auto_cleanup_duration: '1h' })).status).toBe(200);
    await processVolumes();
    const idle = await get('vol-idle');
    const twoHoursAgo = Date.now() - 2 * 3600_000;
    // Due now, and idle for two hours.
    await server.app.db
      .updateTable('volumes')
      .set({ last_job_processed_at: twoHoursAgo, last_processed_at: 0 })
      .where('name', 'in', ['vol-idle', 'vol-young'])
      .execute();
    await server.app.db
      .updateTable('volumes')
      .set({ last_job_processed_at: Date.now() })
      .where('name', '=', 'vol-young')
      .execute();
    await processVolumes();
    expect((await server.request('/api/project/main/volumes/get', { name: 'vol-idle' })).status).toBe(400);
    expect(existsSync(join(volumesDir, idle.volume_id as string))).toBe(false);
    expect((await get('vol-young')).status).toBe('active');
  });

  it('refuses at plan a run whose volume is missing, or that the process runtime cannot mount', async () => {
    const plan = (volumes: unknown[]) =>
      server.request('/api/project/main/runs/get_plan', {
        run_spec: { configuration: { type: 'task', commands: ['true'], volumes } },
      });
    const missing = await plan(['nowhere:/data']);
    expect(missing.status).toBe(400);
    expect(missing.body.detail[0].msg).toBe('volumes: volume nowhere not found');
    const processRuntime = await plan(['vol-a:/data']);
    expect(processRuntime.status).toBe(400);
    expect(processRuntime.body.detail[0].msg).toContain(
      'no backend can run the job with its volumes: local:',
    );
    expect(processRuntime.body.detail[0].msg).toContain('runtime: process');
    const hostPath = await plan(['/srv/data:/data']);
    expect(hostPath.status).toBe(400);
    expect(hostPath.body.detail[0].msg).toContain('no backend can run the job with its volumes');
    // An optional instance mount does not narrow anything: a backend without them leaves it out.
    const optional = await plan([{ instance_path: '/srv/data', path: '/data', optional: true }]);
    expect(optional.status, JSON.stringify(optional.body)).toBe(200);
  });
});
