import { deriveRunnerToken } from '@dstack/core/agent-protocol';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { fleetRequirementsOf } from '../fleets/fleet-provisioning.js';
import { createRunFleet } from '../fleets/fleets.js';
import { insertPendingInstance } from '../fleets/instance-launch.js';
import { createTestApp, type TestApp } from '../testing/test-app.test.helpers.js';
import { checkPostgresReachable } from '../testing/test-database.test.helpers.js';
import { instanceAgentToken, launchAgentToken, runnerAgentToken } from './agent-tokens.js';

for (const dialect of ['sqlite', 'postgres'] as const) {
  describe(`instance agent tokens [${dialect}]`, async () => {
    const unreachable = dialect === 'postgres' ? await checkPostgresReachable() : null;
    if (unreachable) {
      it.skip(unreachable, () => {});
      return;
    }
    let server: TestApp;

    beforeAll(async () => {
      server = await createTestApp({ dialect, routes: [] });
    });
    afterAll(async () => {
      await server?.close();
    });

    async function pendingInstance(name: string) {
      const { app } = server;
      const project = await app.db.selectFrom('projects').selectAll().executeTakeFirstOrThrow();
      const fleet = await createRunFleet(app, project.id, name);
      return insertPendingInstance(app, {
        projectId: project.id,
        fleet,
        requirements: fleetRequirementsOf({}),
        terminationIdleTime: null,
        busyBlocks: 0,
      });
    }

    it('chooses a token per instance, stored encrypted, handed to every launch of it', async () => {
      const { app } = server;
      const first = await pendingInstance('tokens-a');
      const second = await pendingInstance('tokens-b');
      const token = await launchAgentToken(app, first.id);
      expect(token).toMatch(/^[A-Za-z0-9_-]{43}$/);
      expect(await launchAgentToken(app, first.id)).toBe(token);
      expect(await launchAgentToken(app, second.id)).not.toBe(token);
      expect(first.agent_token).not.toContain(token);
      expect(await instanceAgentToken(app, first.id)).toBe(token);
    });

    it('gives a row written before tokens existed one token, whoever launches it first', async () => {
      const { app } = server;
      const legacy = await pendingInstance('tokens-legacy');
      await app.db.updateTable('instances').set({ agent_token: null }).where('id', '=', legacy.id).execute();
      expect(await instanceAgentToken(app, legacy.id)).toBeNull();
      const racing = await Promise.all([launchAgentToken(app, legacy.id), launchAgentToken(app, legacy.id)]);
      expect(racing[1]).toBe(racing[0]);
      expect(await instanceAgentToken(app, legacy.id)).toBe(racing[0]);
    });

    it("derives a shim task's runner token; a container backend's runner has the instance's", async () => {
      const { app } = server;
      const instance = await pendingInstance('tokens-runner');
      const token = await launchAgentToken(app, instance.id);
      const job = { id: 'job-1', instance_id: instance.id };
      expect(await runnerAgentToken(app, job, { dockerized: true })).toBe(deriveRunnerToken(token, 'job-1'));
      expect(await runnerAgentToken(app, job, { dockerized: false })).toBe(token);
      expect(
        await runnerAgentToken(app, { id: 'job-2', instance_id: null }, { dockerized: true }),
      ).toBeNull();
    });
  });
}
