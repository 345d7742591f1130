/**
 * AWS's clusters and EBS volumes end to end on the emulated AWS (`aws-clusters-volumes.ts`),
 * dstack's own volume examples (`aws-volume-examples.ts`, in eu-central-1, the region they name)
 * and capacity reservations (`aws-reservations.ts`), on one server and emulator of this file's.
 * Moved here from `aws-emulator.test.ts`, which runs the scenarios every VM cloud passes.
 */
import { describeAwsClustersAndVolumes } from './aws-clusters-volumes.js';
import { emulatedAws } from './aws-emulated-cloud.js';
import { describeAwsReservations } from './aws-reservations.js';
import { describeAwsVolumeExamples } from './aws-volume-examples.js';
import { describeVmCloudRuns } from './vm-cloud-runs.js';

const { scenarios, aws } = emulatedAws();
describeVmCloudRuns({
  ...scenarios,
  commonScenarios: false,
  more: (context) => {
    describeAwsClustersAndVolumes(context, aws);
    describeAwsVolumeExamples(context, aws);
    describeAwsReservations(context, aws);
  },
});
