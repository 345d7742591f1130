/**
 * A run on the emulated AWS (the real AWS SDK against the EC2 emulator), end to end: the
 * scenarios every VM cloud passes (`vm-cloud-runs.ts`). AWS's own scenarios run in files of
 * their own, each with its emulator, so the two test workers share the minutes: clusters and
 * EBS volumes, and dstack's volume examples, in `aws-clusters-volumes.test.ts`; dstack's
 * torchrun example across two nodes in `aws-torchrun.test.ts`.
 */
import { emulatedAws } from './aws-emulated-cloud.js';
import { describeVmCloudRuns } from './vm-cloud-runs.js';

describeVmCloudRuns(emulatedAws().scenarios);
