/**
 * `reservation` on the emulated AWS, end to end on the server, EC2 emulator and hosts of
 * `aws-clusters-volumes.test.ts`: a task with `reservation: cr-…` is offered the Capacity
 * Reservation's type in its zone only, launches into it and runs there; with an unknown
 * reservation the plan has no offers and says why.
 */
import type { Run } from '@dstack/core';
import type { AwsEmulator } from '@dstack/testing/emulators';
import { beforeAll, describe, expect, it } from 'vitest';
import { deleteFleet, gpuTask, planJob, provisionedInstance } from './cloud-run-helpers.js';
import { applyTask, type HarnessServer } from './server-harness.js';
import type { VmCloudContext } from './vm-cloud-runs.js';

export function describeAwsReservations(context: VmCloudContext, emulator: () => AwsEmulator): void {
  describe('capacity reservations', () => {
    let harness: HarnessServer;
    let aws: AwsEmulator;
    /** What the task runs in: the reservation is tested here, not dstack's base image. */
    let smallImage: string;

    beforeAll(() => {
      harness = context.harness();
      aws = emulator();
      smallImage = context.smallImage();
    });

    it('launches a task with reservation: cr-… into that capacity reservation; with an unknown reservation the plan says why it has no offers', async () => {
      const runName = 'aws-reserved';
      const task = gpuTask(runName, ['echo ran-in-the-reservation'], { image: smallImage });
      // Reserved: the cheapest offer's type, in a zone other than the first it would try.
      const [cheapest] = (await planJob(harness, task)).offers;
      const zone = cheapest?.availability_zones?.at(-1);
      if (!cheapest || !zone || cheapest.availability_zones?.length === 1) {
        throw new Error(`the cheapest offer has not several zones: ${JSON.stringify(cheapest)}`);
      }
      const reservation = aws.addCapacityReservation({
        instanceType: cheapest.instance.name,
        availabilityZone: zone,
        instanceCount: 1,
        instanceMatchCriteria: 'targeted',
      });

      const reserved = { ...task, reservation: reservation.id };
      const plan = await planJob(harness, reserved);
      expect(plan.offers.length).toBeGreaterThan(0);
      for (const offer of plan.offers) {
        expect(offer).toMatchObject({
          backend: 'aws',
          instance: { name: cheapest.instance.name, resources: { spot: false } },
          region: cheapest.region,
          availability_zones: [zone],
        });
      }
      await applyTask(harness, reserved);
      const run: Run = await harness.waitForRun(runName, ['done', 'failed', 'terminated'], 300_000);
      expect(run.status, run.latest_job_submission?.termination_reason_message ?? '').toBe('done');
      expect(await harness.logs(runName)).toContain('ran-in-the-reservation');
      const instance = provisionedInstance(run);
      expect(instance).toMatchObject({ type: cheapest.instance.name, zone });
      expect(run.latest_job_submission?.job_provisioning_data?.reservation).toBe(reservation.id);
      expect(aws.state().instances.find((each) => each.id === instance.id)?.capacityReservationId).toBe(
        reservation.id,
      );
      expect(aws.state().capacityReservations.find((each) => each.id === reservation.id)).toMatchObject({
        availableInstanceCount: 0,
        instances: [instance.id],
      });
      await deleteFleet(harness, runName);

      const unknown = 'cr-0123456789abcdef0';
      const none = await planJob(harness, { ...task, name: 'aws-unreserved', reservation: unknown });
      expect(none.offers).toEqual([]);
      // Each stated requirement is weighed on its own; the reservation excludes every offer, and says why.
      const exclusion = none.exclusions.find((each) => each.requirement.startsWith('reservation'));
      expect(exclusion?.requirement).toBe(
        `reservation ${unknown} (aws: no capacity reservation or capacity block ${unknown} in ${aws.regions.join(', ')})`,
      );
      expect(exclusion?.excluded).toBe(Math.max(...none.exclusions.map((each) => each.excluded)));
    }, 600_000);
  });
}
