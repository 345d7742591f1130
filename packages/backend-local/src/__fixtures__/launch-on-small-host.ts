/**
 * A server on a host shared with others: prints `ready`, waits for the file `<go file>`, then
 * launches `count` local instances at once on a host of `cpus` CPUs (injected), prints each
 * outcome as JSON and ends, leaving the shims running. The go file lets several of these
 * launch at the same moment.
 * Usage: tsx --conditions=source launch-on-small-host.ts <instances dir> <cpus> <count> <go file>
 */
import { existsSync } from 'node:fs';
import { setTimeout as sleep } from 'node:timers/promises';
import { NoCapacityError } from '@dstack/core';
import { createLocalBackend } from '../index.js';
import { modestRequirements, smallHost, testInstanceConfiguration } from './local-instances.js';

const [instancesDir, cpus, count, goFile] = process.argv.slice(2);
if (!instancesDir || !cpus || !count || !goFile) {
  throw new Error('usage: launch-on-small-host.ts <instances dir> <cpus> <count> <go file>');
}
const compute = createLocalBackend({ instancesDir, hostResources: smallHost({ cpuCount: Number(cpus) }) });
const [offer] = await compute.getOffers(modestRequirements());
if (!offer) throw new Error('the host has no local offer');
process.stdout.write('ready\n');
for (let waited = 0; !existsSync(goFile); waited += 5) {
  if (waited > 60_000) throw new Error(`${goFile} did not appear`);
  await sleep(5);
}
const outcomes = await Promise.all(
  Array.from({ length: Number(count) }, (_, index) =>
    compute.createInstance(offer, testInstanceConfiguration(`replica-${index}`)).then(
      (provisioningData) => ({ launched: provisioningData }),
      (error: unknown) => ({ noCapacity: NoCapacityError.isInstance(error), message: String(error) }),
    ),
  ),
);
process.stdout.write(`${JSON.stringify(outcomes)}\n`);
