import { describe, expect, it } from 'vitest';
import { createAppCaches } from '../app-context.js';
import type { AppContext } from '../context.js';
import type { JobsTable } from '../db/schema.js';
import { forgetReplicaTurn, instancePortOf, nextReplica } from './service-proxy-replicas.js';

const job = (name: string) => ({ job_name: name }) as JobsTable;

describe('service replicas', () => {
  it('takes replicas in turn per run, and a run forgotten starts over', () => {
    const app = { caches: createAppCaches() } as AppContext;
    const replicas = [job('a'), job('b'), job('c')];
    const names = Array.from({ length: 5 }, () => nextReplica(app, 'run-1', replicas).job_name);
    expect(names).toEqual(['a', 'b', 'c', 'a', 'b']);
    // Another run has its own turn.
    expect(nextReplica(app, 'run-2', replicas).job_name).toBe('a');
    // One replica fewer: the turn goes on over the ones left.
    expect(nextReplica(app, 'run-1', replicas.slice(0, 2)).job_name).toBe('b');
    forgetReplicaTurn(app, 'run-1');
    expect(nextReplica(app, 'run-1', replicas).job_name).toBe('a');
  });

  it("uses the shim's port mapping when there is one, else the service port itself", () => {
    expect(instancePortOf({ job_runtime_data: null }, 8000)).toBe(8000);
    expect(
      instancePortOf({ job_runtime_data: JSON.stringify({ network_mode: 'host', ports: {} }) }, 8000),
    ).toBe(8000);
    expect(
      instancePortOf(
        {
          job_runtime_data: JSON.stringify({
            network_mode: 'bridge',
            ports: { '8000': 32768, '10999': 32769 },
          }),
        },
        8000,
      ),
    ).toBe(32768);
  });
});
