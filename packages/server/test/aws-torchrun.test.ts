/**
 * dstack's torchrun example across two nodes of a cluster fleet on the emulated AWS
 * (`torchrun-cluster.ts`: PyTorch DDP over gloo on CPU, in the torch image pulled from a test
 * registry), on a server and emulator of this file's. Moved here from `aws-emulator.test.ts`,
 * which runs the scenarios every VM cloud passes.
 */
import { emulatedAws } from './aws-emulated-cloud.js';
import { describeTorchrunAcrossNodes } from './torchrun-cluster.js';
import { describeVmCloudRuns } from './vm-cloud-runs.js';

describeVmCloudRuns({
  ...emulatedAws().scenarios,
  commonScenarios: false,
  more: (context) => describeTorchrunAcrossNodes(context, 'aws'),
});
