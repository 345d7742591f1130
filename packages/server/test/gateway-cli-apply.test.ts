/**
 * `dstack apply -f gateway.dstack.yml` again, as dstack's CLI does it, through the server's plan:
 * a new domain or default changes the gateway in place; a new region re-creates it (deleted, then
 * created) after the question, which `-y` answers. A real server with the fake cloud's gateways.
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { createFakeBackendPlugin, FAKE_BACKEND_VALID_API_KEY } from '@dstack/testing';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { stringify } from 'yaml';
import { requireBuiltDstack, runDstack } from './dstack-cli.js';
import {
  ADMIN_TOKEN,
  describeOnDatabase,
  type HarnessServer,
  makeTempDir,
  startHarnessServer,
} from './server-harness.js';

interface GatewayAnswer {
  id: string;
  wildcard_domain: string | null;
  default: boolean;
  configuration: { region?: string };
}

describeOnDatabase('sqlite')('dstack apply of a gateway that exists', (databaseUrl) => {
  const temp = makeTempDir('dstack-gateway-cli-');
  let harness: HarnessServer;
  const file = join(temp.dir, 'gateway.dstack.yml');
  const cli = { DSTACK_CLI_CONFIG_DIR: join(temp.dir, 'cli') };

  beforeAll(async () => {
    requireBuiltDstack();
    mkdirSync(cli.DSTACK_CLI_CONFIG_DIR, { recursive: true });
    harness = await startHarnessServer({
      databaseUrl: databaseUrl(),
      dir: temp.dir,
      plugins: [createFakeBackendPlugin({ capabilities: ['create-instance', 'gateways'] })],
      config: {
        projects: [
          {
            name: 'main',
            backends: [{ type: 'fake', creds: { type: 'api_key', api_key: FAKE_BACKEND_VALID_API_KEY } }],
          },
        ],
      },
    });
    writeFileSync(
      join(cli.DSTACK_CLI_CONFIG_DIR, 'config.yml'),
      stringify({ projects: [{ name: 'main', url: harness.server.url, token: ADMIN_TOKEN, default: true }] }),
    );
  });
  afterAll(async () => {
    await harness?.close();
    temp.remove();
  });

  const apply = async (fields: Record<string, unknown>, flags = ['-y', '-d']) => {
    writeFileSync(
      file,
      stringify({
        type: 'gateway',
        name: 'gw',
        backend: 'fake',
        region: 'fake-region-1',
        certificate: null,
        ...fields,
      }),
    );
    return runDstack(['apply', '-f', file, ...flags], { env: cli });
  };
  const gateway = async () =>
    (await harness.call<GatewayAnswer>('/api/project/main/gateways/get', { name: 'gw' })).body;

  it('updates the domain and default in place, and re-creates the gateway for a new region', async () => {
    const created = await apply({});
    expect(created.code, created.stderr).toBe(0);
    const first = await gateway();

    const renamed = await apply({ domain: 'gw.example.com', default: false });
    expect(renamed.code, renamed.stderr).toBe(0);
    expect(renamed.stdout).toMatch(/gw\s+fake \(fake-region-1\)\s+\S*\s*gw\.example\.com\s/);
    expect(await gateway()).toMatchObject({
      id: first.id,
      wildcard_domain: 'gw.example.com',
      default: false,
    });

    // Asked first: without a terminal to answer on, nothing changes.
    const asked = await apply({ domain: 'gw.example.com', region: 'fake-region-2' }, ['-d']);
    expect(asked.code).toBe(1);
    expect(asked.stderr).toContain(
      'Gateway gw exists and cannot be updated in place. Re-create the gateway?',
    );
    expect((await gateway()).id).toBe(first.id);
    const moved = await apply({ domain: 'gw.example.com', region: 'fake-region-2' });
    expect(moved.code, moved.stderr).toBe(0);
    const recreated = await gateway();
    expect(recreated.id).not.toBe(first.id);
    expect(recreated.configuration.region).toBe('fake-region-2');
  }, 60_000);
});
