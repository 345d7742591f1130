/**
 * Creates one local instance, prints its provisioning data as JSON and ends
 * without stopping anything: the test checks that the shim outlives this process.
 * Usage: tsx --conditions=source create-instance-and-exit.ts <instances dir>
 */
import { createLocalBackend } from '../index.js';
import { modestRequirements, testInstanceConfiguration } from './local-instances.js';

const instancesDir = process.argv[2];
if (!instancesDir) throw new Error('usage: create-instance-and-exit.ts <instances dir>');
const compute = createLocalBackend({ instancesDir });
const [offer] = await compute.getOffers(modestRequirements());
if (!offer) throw new Error('the host has no local offer');
const provisioningData = await compute.createInstance(offer, testInstanceConfiguration('orphan-test'));
process.stdout.write(`${JSON.stringify(provisioningData)}\n`);
