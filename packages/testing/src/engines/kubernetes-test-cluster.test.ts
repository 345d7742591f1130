import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { holdKubernetesTestCluster } from './kubernetes-test-cluster.js';

// The lock's behaviour on a file of its own: the machine's lock belongs to the cluster's files.
describe('holdKubernetesTestCluster', () => {
  const dir = mkdtempSync(join(tmpdir(), 'dstack-kubernetes-lock-'));
  const lockFile = join(dir, 'cluster.lock');
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it('lets one file hold the cluster at a time, and the next once the first releases it', async () => {
    const release = await holdKubernetesTestCluster({ lockFile });

    // flock's own timeout is the wait: a second holder gives up while the first holds on.
    await expect(holdKubernetesTestCluster({ lockFile, timeoutMs: 1000 })).rejects.toThrow(
      /stayed taken by another test file for 1000 ms/,
    );
    const waiting = holdKubernetesTestCluster({ lockFile });
    await release();
    const releaseNext = await waiting;
    await releaseNext();
  });
});
