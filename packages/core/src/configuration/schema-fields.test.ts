import { describe, expect, it } from 'vitest';
import { CONFIGURATION_SCHEMAS } from './parse-configuration.js';
import { schemaFieldPaths } from './schema-fields.js';

describe('schemaFieldPaths', () => {
  it('lists top-level, nested, array and selectSchema fields', () => {
    const service = schemaFieldPaths(CONFIGURATION_SCHEMAS.service);
    expect(service).toEqual(
      expect.arrayContaining([
        'name',
        'resources.shm_size',
        'resources.gpu',
        'retry.on_events',
        'replicas[].count',
        'replicas[].scaling.target',
        'model.format',
        'model.chat_template',
        'probes[].url',
      ]),
    );
    const fleet = schemaFieldPaths(CONFIGURATION_SCHEMAS.fleet);
    expect(fleet).toEqual(
      expect.arrayContaining([
        'ssh_config.hosts[].internal_ip',
        'ssh_config.proxy_jump.hostname',
        'nodes.min',
      ]),
    );
    // `env` is a map of the user's own names: a leaf.
    expect(fleet.filter((path) => path.startsWith('env.'))).toEqual([]);
  });
});
