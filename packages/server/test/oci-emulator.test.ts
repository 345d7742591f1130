/**
 * A run on the emulated OCI (OCI's own SDK, every request signed with the API key, against the OCI
 * emulator), end to end: the scenarios of `vm-cloud-runs.ts`. The server plans from its bundled
 * snapshot's oci.csv (the emulator's shapes and Cost Estimator prices, as the collector gathers
 * them); the backend's configurator makes the compartment, VCN, gateway and subnet; instances
 * boot from dstack's marketplace image (Docker, dstack's images pre-pulled) and run the cloud-init
 * user_data. OCI's "Out of host capacity" shows in the capacity reports and at launch; a deleted
 * fleet must leave no instance (but TERMINATED ones, as OCI lists them), VNIC or boot volume.
 * Spot (preemptible V100) is left out to keep the suite's time: its path is the launch's
 * `preemptibleInstanceConfig`, checked by the conformance suite's offers and the emulator.
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { type OciEmulator, ociEmulatorBackend, startOciEmulator } from '@dstack/testing/emulators';
import { expect, it } from 'vitest';
import { stringify } from 'yaml';
import { runDstack } from './dstack-cli.js';
import { ADMIN_TOKEN, makeTempDir } from './server-harness.js';
import { describeVmCloudRuns } from './vm-cloud-runs.js';

describeVmCloudRuns({
  database: 'sqlite',
  cloud: 'oci',
  regions: ['us-ashburn-1', 'eu-frankfurt-1'],
  gpu: 'A10',
  skipScenarios: ['private-image', 'no-agent', 'spot'],
  async start(hosts) {
    const emulator: OciEmulator = await startOciEmulator({ hosts });
    const instances = () => emulator.state().instances;
    return {
      backend: ociEmulatorBackend(emulator),
      failCapacity(offer) {
        emulator.addFault({ code: 'OutOfHostCapacity', shape: offer.instance.name, region: offer.region });
      },
      refuseCredentials: () => emulator.addFault({ code: 'NotAuthenticated' }),
      clearFaults: () => emulator.clearFaults(),
      interruptSpot: (id) => emulator.preemptInstance(id),
      isSpot: (id) => instances().find((each) => each.id === id)?.preemptible === true,
      isGone: (id) =>
        !instances().some(
          (each) => each.id === id && each.state !== 'TERMINATED' && each.state !== 'TERMINATING',
        ),
      runningIds: () =>
        instances()
          .filter((each) => each.state === 'RUNNING' || each.state === 'PROVISIONING')
          .map((each) => each.id),
      state: () => emulator.state(),
      close: () => emulator.close(),
    };
  },
  launchFaults: ['refused-credentials'],
  more(context) {
    it('answers dstack offer --gpu 1 -b oci with the shapes dstack supports, cheapest first', async () => {
      const temp = makeTempDir();
      try {
        mkdirSync(join(temp.dir, 'cli'), { recursive: true });
        writeFileSync(
          join(temp.dir, 'cli', 'config.yml'),
          stringify({
            projects: [
              { name: 'main', url: context.harness().server.url, token: ADMIN_TOKEN, default: true },
            ],
          }),
        );
        const offered = await runDstack(['offer', '--gpu', '1', '-b', 'oci'], {
          env: { DSTACK_CLI_CONFIG_DIR: join(temp.dir, 'cli') },
        });
        expect(offered.code, offered.stderr).toBe(0);
        const rows = offered.stdout.split('\n').filter((line) => /^\s*\d+\s+oci\s/.test(line));
        const prices = rows.map((line) => Number(/\$(\d+(?:\.\d+)?)/.exec(line)?.[1]));
        expect(prices.length).toBeGreaterThan(3);
        expect(prices).toEqual([...prices].sort((left, right) => left - right));
        // The preemptible V100 at half price first; P100 (VM.GPU2) is not a family dstack supports.
        expect(rows[0]).toMatch(/V100.*\$1\.475.*available/);
        expect(offered.stdout).not.toMatch(/P100/);
      } finally {
        temp.remove();
      }
    }, 120_000);
  },
  hello: { command: 'echo hello from the emulated oci', expected: () => 'hello from the emulated oci' },
});
