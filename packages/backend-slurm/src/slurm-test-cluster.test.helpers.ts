/**
 * The Slurm cluster the tests run against: the one `scripts/services/ensure-slurm.sh` started
 * (its settings from `SLURM_HOSTNAME`, `SLURM_PORT`, `SLURM_USER`, `SLURM_PRIVATE_KEY`, else from
 * its state directory). Outside CI a cluster that does not answer skips the tests; under
 * `CI=true` it fails them, as the Postgres tests do: CI must run them.
 */
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { type SlurmLogin, withLoginSession } from './slurm-login.js';

const DEFAULT_STATE_DIRECTORY = '/var/tmp/dstack-slurm';

export interface TestSlurmCluster extends SlurmLogin {
  privateKeyPath: string;
}

function settings(): TestSlurmCluster | string {
  const stateDirectory = process.env.DSTACK_SLURM_DIR ?? DEFAULT_STATE_DIRECTORY;
  const portFile = join(stateDirectory, 'sshd.port');
  const hostname = process.env.SLURM_HOSTNAME ?? '127.0.0.1';
  const port = Number(
    process.env.SLURM_PORT ?? (existsSync(portFile) ? readFileSync(portFile, 'utf8').trim() : NaN),
  );
  const user = process.env.SLURM_USER ?? 'dstack-slurm';
  const privateKeyPath = process.env.SLURM_PRIVATE_KEY ?? join(stateDirectory, 'id_ed25519');
  if (!Number.isInteger(port) || !existsSync(privateKeyPath)) {
    return 'no Slurm test cluster: run scripts/services/ensure-slurm.sh (or set SLURM_HOSTNAME, SLURM_PORT, SLURM_USER, SLURM_PRIVATE_KEY)';
  }
  return { hostname, port, user, privateKeyPath, privateKey: readFileSync(privateKeyPath, 'utf8') };
}

let checked: Promise<TestSlurmCluster | string> | undefined;

/** The cluster, or why there is none (outside CI). Under `CI=true` no cluster rejects. */
export function testSlurmCluster(): Promise<TestSlurmCluster | string> {
  checked ??= (async () => {
    let found = settings();
    if (typeof found !== 'string') {
      const cluster = found;
      found = await withLoginSession(cluster, (session) =>
        session.run('scontrol ping', 'scontrol ping'),
      ).then(
        (answer) => (answer.includes('UP') ? cluster : `the Slurm controller is not up: ${answer.trim()}`),
        (error: unknown) => `the Slurm test cluster does not answer: ${(error as Error).message}`,
      );
    }
    if (typeof found === 'string' && process.env.CI === 'true') {
      throw new Error(`${found} (CI=true: the Slurm tests must run, not be skipped)`);
    }
    return found;
  })();
  return checked;
}
