/**
 * The end-to-end scenarios every VM cloud passes on its emulator, once, on the database its test
 * file names (AWS on Postgres, GCP on SQLite): a real
 * server with the cloud's backend package, the emulator (the real SDK or REST client against it),
 * and an emulated host per instance (a Docker container of a Debian image with its own Docker
 * daemon, running the exact user data or startup script: it downloads the agent runtime from the
 * server's `DSTACK_SHIM_DOWNLOAD_URL`, served on the hosts' bridge; the hosts have no node). The
 * server reaches the shim over SSH with the project key, and the task runs in a container of its
 * image: dstack's default image by its real name (the server keeps dstack's defaults), pre-pulled
 * on hosts of dstack's own VM images as dstack's Packer builds make them, and pulled elsewhere from
 * a public registry of the test's that stands in for Docker Hub; or the image the task names,
 * pulled by the host's daemon. A cloud's test file says how its emulator is started and how a fault or a
 * preemption is injected.
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { AGENT_BOOTSTRAP_FAILURE_MARKER } from '@dstack/core';
import {
  type AgentRuntimeServer,
  type DefaultImageRegistry,
  DockerEmulatedHosts,
  type LocalDockerRegistry,
  RUNNER_BUSYBOX_TEST_IMAGE,
  serveAgentRuntime,
  serveDefaultImages,
  startLocalDockerRegistry,
  TEST_IMAGE_MARKER_PATH,
} from '@dstack/testing/emulators';
import { afterAll, afterEach, beforeAll, expect, it } from 'vitest';
import { stringify } from 'yaml';
import type { SqlDialect } from '../src/context.js';
import {
  deleteAllFleets,
  deleteFleet,
  type EmulatedCloudState,
  expectCloudEmpty,
  gpuTask,
  planJob,
  provisionedInstance,
} from './cloud-run-helpers.js';
import { requireBuiltDstack, runDstack } from './dstack-cli.js';
import { dockerMissing } from './emulated-hosts-harness.js';
import {
  ADMIN_TOKEN,
  applyTask,
  describeOnDatabase,
  type HarnessServer,
  makeTempDir,
  startHarnessServer,
  waitFor,
} from './server-harness.js';

type Offer = Awaited<ReturnType<typeof planJob>>['offers'][number];

/**
 * The image of the scenarios about the cloud rather than the image (capacity, throttling, spot),
 * on the public registry: hosts of stock images (the DLAMI, Lambda's, Verda's) pull what a job
 * runs in, and dstack's base image is pulled only by the scenarios about it.
 */
const SMALL_IMAGE = 'dstack-test/busybox:1';

/** The private image the hosts pull with `registry_auth`, and what it says it is. */
const PRIVATE_IMAGE_MARKER = 'the private image\n';

/** A registry that checks credentials, with one image, where the hosts pull from. */
async function startPrivateRegistry(
  hosts: DockerEmulatedHosts,
): Promise<{ registry: LocalDockerRegistry; image: string }> {
  const registry = await startLocalDockerRegistry({ hosts });
  await registry.push(RUNNER_BUSYBOX_TEST_IMAGE, 'team/tool:v1', {
    [TEST_IMAGE_MARKER_PATH]: PRIVATE_IMAGE_MARKER,
  });
  return { registry, image: `${registry.hostsAddress}/team/tool:v1` };
}

type Instance = ReturnType<typeof provisionedInstance>;

/** One cloud's emulator, as the scenarios drive it; `state()` is what `expectCloudEmpty` reads. */
export interface EmulatedVmCloud extends EmulatedCloudState {
  /** The backend entry of project `main` in the server's config.yml. */
  backend: { type: string } & Record<string, unknown>;
  /** The server's `catalog.url` when the cloud's prices are the emulator's own (not in the bundled snapshot). */
  catalogUrl?: string;
  /** Makes every zone of `offer` answer a launch with the cloud's no-capacity error. */
  failCapacity(offer: Offer): void;
  /** The cloud refuses the backend's key on every call (its auth fault); `clearFaults` ends it. */
  refuseCredentials?(): void;
  /** The cloud throttles the first `count` launch calls, or every one without `count`; `clearFaults` ends it. */
  throttleLaunches?(count?: number): void;
  clearFaults(): void;
  /** The cloud takes the spot instance back. */
  interruptSpot(instanceId: string): void;
  isSpot(instanceId: string): boolean;
  /** The instance is deleted or terminated in the cloud. */
  isGone(instanceId: string): boolean;
  /** Ids of the instances still running in the cloud. */
  runningIds(): string[];
  close(): Promise<void>;
}

/** The common scenarios a cloud's file may leave out (`skipScenarios`). */
export type VmCloudScenario = 'private-image' | 'spot' | 'no-agent';

export interface VmCloudScenarios {
  /** The backend type, also the prefix of run names. */
  cloud: string;
  regions: string[];
  start(hosts: DockerEmulatedHosts, regions: string[]): Promise<EmulatedVmCloud>;
  /** The first command's output in the logs, given where it ran. */
  hello: { command: string; expected(instance: Instance): string };
  /** The GPU the scenarios' tasks ask for (`resources.gpu`). Default `T4`. */
  gpu?: string;
  /** The GPU of the spot scenario, where `gpu` has no spot offers (Nebius's L40S). Default `gpu`. */
  spotGpu?: string;
  /**
   * Scenarios that do not apply to the cloud (Lambda has no spot) or that another cloud's file
   * already runs on the same code path (a task's own image is pulled by the host, whatever the cloud).
   */
  skipScenarios?: ReadonlyArray<VmCloudScenario>;
  /** The launch faults this cloud's emulator injects (`refuseCredentials`, `throttleLaunches`). */
  launchFaults?: ReadonlyArray<'refused-credentials' | 'throttling'>;
  /** More to check about where the cheapest offer landed (GCP: the zone). */
  expectLandedOn?(instance: Instance, offer: Offer): void;
  /**
   * The server's database: the clouds' suites share the two between them, each running its slow
   * cases once, since what they test is the cloud and the host, not the database.
   */
  database: SqlDialect;
  /**
   * The cloud's own scenarios (clusters, volumes), on this file's server, emulator and hosts: a
   * server with its emulator and registries is not started twice in one file.
   */
  more?(context: VmCloudContext): void;
  /**
   * Whether this file runs the scenarios every VM cloud passes (default true). A cloud whose own
   * scenarios take many minutes splits them over several files, each with its emulator, so the
   * two test workers finish together; one of them runs the common scenarios.
   */
  commonScenarios?: boolean;
}

/** What a cloud's own scenarios use; each getter answers once `beforeAll` has run. */
export interface VmCloudContext {
  harness(): HarnessServer;
  hosts(): DockerEmulatedHosts;
  /** The public registry the hosts pull dstack's default images from; a scenario may push its own images to it. */
  defaultImages(): DefaultImageRegistry;
  /**
   * A 2 MB busybox on that registry, for the scenarios about the cloud rather than the image: a
   * host of a stock VM image (AWS's Deep Learning AMI) would pull dstack's base image for each.
   */
  smallImage(): string;
  /** The label of this file's hosts (for `expectCloudEmpty`'s `hostsOf`). */
  emulatorName: string;
}

export function describeVmCloudRuns(scenarios: VmCloudScenarios): void {
  const { cloud } = scenarios;
  /**
   * The label value of this file's hosts, so the check for leftovers sees no other test's; the
   * hosts' containers are named after it, so a test run beside another on the same Docker meets none of its hosts.
   */
  const emulatorName = `${cloud}-e2e-${process.pid}`;

  const task = (name: string, commands: string[], extra: Record<string, unknown> = {}) =>
    gpuTask(name, commands, scenarios.gpu ? { resources: { gpu: scenarios.gpu }, ...extra } : extra);
  const runsScenario = (scenario: VmCloudScenario) => !scenarios.skipScenarios?.includes(scenario);

  const describeOnItsDatabase = describeOnDatabase(scenarios.database, { skip: dockerMissing });
  describeOnItsDatabase(`a task on the emulated ${cloud}`, (databaseUrl) => {
    let hosts: DockerEmulatedHosts;
    let tarball: AgentRuntimeServer;
    let defaultImages: DefaultImageRegistry;
    let privateRegistry: { registry: LocalDockerRegistry; image: string } | undefined;
    /** A 2 MB image for the scenarios about the cloud, not the image (hosts of stock images pull what jobs run in). */
    let smallImage: string;
    let emulator: EmulatedVmCloud;
    let harness: HarnessServer;
    const temp = makeTempDir();
    /** How far the server's clock (the one retries' backoff is read on) is ahead of the real one. */
    let clockOffsetMs = 0;

    beforeAll(async () => {
      hosts = new DockerEmulatedHosts({ emulator: emulatorName });
      tarball = await serveAgentRuntime(hosts);
      // The private registry serves the private-image scenario only.
      defaultImages = await serveDefaultImages(hosts);
      await defaultImages.registry.push(RUNNER_BUSYBOX_TEST_IMAGE, SMALL_IMAGE);
      smallImage = `${defaultImages.registry.hostsAddress}/${SMALL_IMAGE}`;
      if (runsScenario('private-image')) privateRegistry = await startPrivateRegistry(hosts);
      emulator = await scenarios.start(hosts, scenarios.regions);
      harness = await startHarnessServer({
        dir: temp.dir,
        config: {
          ...(emulator.catalogUrl ? { catalog: { url: emulator.catalogUrl } } : {}),
          projects: [{ name: 'main', backends: [emulator.backend] }],
        },
        databaseUrl: databaseUrl(),
        env: { DSTACK_SHIM_DOWNLOAD_URL: tarball.url },
        clock: () => Date.now() + clockOffsetMs,
      });
    }, 300_000);

    // Nothing left in the cloud after a test: no live instance, attached volume, group or host.
    afterEach(() => expectCloudEmpty(emulator, { hostsOf: emulatorName }), 150_000);

    afterAll(async () => {
      await harness?.terminateFleetsAndClose();
      await emulator?.close();
      await hosts?.close();
      await tarball?.close();
      await defaultImages?.stop();
      await privateRegistry?.registry.stop();
      temp.remove();
    }, 300_000);

    // A file may run only its cloud's own scenarios on this set-up (another file runs these).
    if (scenarios.commonScenarios !== false) {
      it('lands on the cheapest offer, runs in the default image, streams the output, and leaves nothing after fleet delete', async () => {
        const runName = `${cloud}-hello`;
        const configuration = task(runName, [scenarios.hello.command, `cat ${TEST_IMAGE_MARKER_PATH}`]);
        const [cheapest] = (await planJob(harness, configuration)).offers;
        if (!cheapest) throw new Error('the plan has no offer');
        expect(cheapest.backend).toBe(cloud);
        await applyTask(harness, configuration);
        const finished = await harness.waitForRun(runName, ['done', 'failed', 'terminated'], 180_000);
        expect(finished.status).toBe('done');
        const instance = provisionedInstance(finished);
        expect({ type: instance.type, region: instance.region }).toEqual({
          type: cheapest.instance.name,
          region: cheapest.region,
        });
        scenarios.expectLandedOn?.(instance, cheapest);
        const output = await harness.logs(runName);
        expect(output).toContain(scenarios.hello.expected(instance));
        expect(output).toContain(defaultImages.marker);

        await deleteFleet(harness, runName);
        await waitFor('the instance to be gone', () => (emulator.isGone(instance.id) ? true : null), 120_000);
      }, 300_000);

      it.runIf(runsScenario('private-image'))(
        "runs a task in the private image it names (registry_auth), and one in dstack's base image under bash, in the uv venv of its python",
        async () => {
          const named = `${cloud}-named-image`;
          const python = `${cloud}-python-311`;
          const printMarker = `cat ${TEST_IMAGE_MARKER_PATH}`;
          if (!privateRegistry) throw new Error('the private registry was not started');
          await Promise.all([
            applyTask(
              harness,
              task(named, [printMarker], {
                image: privateRegistry.image,
                registry_auth: {
                  username: privateRegistry.registry.username,
                  password: privateRegistry.registry.password,
                },
              }),
            ),
            applyTask(
              harness,
              task(
                python,
                [printMarker, 'echo "bash $BASH_VERSION"', 'python --version', 'command -v python'],
                {
                  python: '3.11',
                },
              ),
            ),
          ]);
          for (const runName of [named, python]) {
            const finished = await harness.waitForRun(runName, ['done', 'failed', 'terminated'], 180_000);
            expect(finished.status, finished.latest_job_submission?.termination_reason_message ?? '').toBe(
              'done',
            );
          }
          expect(await harness.logs(named)).toContain(PRIVATE_IMAGE_MARKER);
          const output = await harness.logs(python);
          expect(output).toContain(defaultImages.marker);
          expect(output).toMatch(/bash 5\./);
          expect(output).toContain('Python 3.11.');
          expect(output).toContain('/dstack/venv/bin/python');
          await deleteAllFleets(harness);
        },
        300_000,
      );

      it('moves on to the next offer when the cheapest has no capacity', async () => {
        const runName = `${cloud}-capacity`;
        const configuration = task(runName, ['echo landed'], { image: smallImage });
        const [cheapest, next] = (await planJob(harness, configuration)).offers;
        if (!cheapest || !next) throw new Error('the plan has fewer than two offers');
        emulator.failCapacity(cheapest);
        try {
          await applyTask(harness, configuration);
          const finished = await harness.waitForRun(runName, ['done', 'failed', 'terminated'], 180_000);
          expect(finished.status).toBe('done');
          const instance = provisionedInstance(finished);
          expect({ type: instance.type, region: instance.region }).toEqual({
            type: next.instance.name,
            region: next.region,
          });
        } finally {
          emulator.clearFaults();
        }
        await deleteFleet(harness, runName);
      }, 300_000);

      it.runIf(scenarios.launchFaults?.includes('refused-credentials'))(
        'fails a job whose backend refuses its key as a backend error, not as no capacity, and dstack ps says so',
        async () => {
          const runName = `${cloud}-denied`;
          emulator.refuseCredentials?.();
          try {
            await applyTask(harness, task(runName, ['echo never']));
            const finished = await harness.waitForRun(runName, ['done', 'failed', 'terminated'], 120_000);
            expect(finished.status).toBe('failed');
            const submission = finished.latest_job_submission;
            expect(submission?.termination_reason).toBe('executor_error');
            expect(submission?.status_message).toBe('error');
            expect(submission?.termination_reason_message).toMatch(
              new RegExp(`^backend ${cloud}: authentication failed: `),
            );
            expect(finished.error).toBe(submission?.termination_reason_message);
          } finally {
            emulator.clearFaults();
          }
          requireBuiltDstack();
          const cliDir = join(temp.dir, 'cli');
          mkdirSync(cliDir, { recursive: true });
          writeFileSync(
            join(cliDir, 'config.yml'),
            stringify({
              projects: [{ name: 'main', url: harness.server.url, token: ADMIN_TOKEN, default: true }],
            }),
          );
          const ps = await runDstack(['ps', '-a', '-v'], { env: { DSTACK_CLI_CONFIG_DIR: cliDir } });
          expect(ps.stdout).toMatch(
            new RegExp(`^${runName}\\s.*error\\s.*backend ${cloud}: authentication failed: `, 'm'),
          );
          expect(emulator.runningIds()).toEqual([]);
          await deleteFleet(harness, runName);
        },
        180_000,
      );

      it.runIf(scenarios.launchFaults?.includes('throttling'))(
        'tries a throttled launch again on the cheapest offer, and fails the job as rate limited when it never passes',
        async () => {
          const passes = `${cloud}-throttled`;
          const configuration = task(passes, ['echo landed'], { image: smallImage });
          const [cheapest] = (await planJob(harness, configuration)).offers;
          if (!cheapest) throw new Error('the plan has no offer');
          // More throttled calls than the backend's own retries: only the server's retry gets through.
          emulator.throttleLaunches?.(6);
          try {
            await applyTask(harness, configuration);
            const finished = await harness.waitForRun(passes, ['done', 'failed', 'terminated'], 180_000);
            expect(finished.status).toBe('done');
            const instance = provisionedInstance(finished);
            expect({ type: instance.type, region: instance.region }).toEqual({
              type: cheapest.instance.name,
              region: cheapest.region,
            });
          } finally {
            emulator.clearFaults();
          }
          await deleteFleet(harness, passes);

          const never = `${cloud}-always-throttled`;
          emulator.throttleLaunches?.();
          try {
            await applyTask(harness, task(never, ['echo never']));
            const finished = await harness.waitForRun(never, ['done', 'failed', 'terminated'], 180_000);
            expect(finished.status).toBe('failed');
            expect(finished.latest_job_submission?.termination_reason).toBe('executor_error');
            expect(finished.latest_job_submission?.termination_reason_message).toMatch(
              new RegExp(`^backend ${cloud}: rate limited: `),
            );
          } finally {
            emulator.clearFaults();
          }
          await deleteFleet(harness, never);
        },
        300_000,
      );

      it.runIf(runsScenario('spot'))(
        'resubmits a spot job the cloud took back, under retry on interruption',
        async () => {
          const runName = `${cloud}-spot`;
          await applyTask(
            harness,
            task(runName, ['sleep 3', 'echo survived'], {
              image: smallImage,
              ...(scenarios.spotGpu ? { resources: { gpu: scenarios.spotGpu } } : {}),
              spot_policy: 'spot',
              retry: { on_events: ['interruption'], duration: '1h' },
            }),
          );
          const running = await harness.waitForRun(runName, ['running'], 180_000);
          const first = provisionedInstance(running);
          expect(emulator.isSpot(first.id)).toBe(true);
          emulator.interruptSpot(first.id);
          // The run waits out dstack's first backoff (15 s, the run pipeline's unit test's subject)
          // on the server's clock, moved to its end here.
          const pending = await harness.waitForRun(runName, ['pending'], 120_000);
          if (!pending.next_triggered_at) throw new Error('the pending run has no next start');
          clockOffsetMs = Math.max(clockOffsetMs, Date.parse(pending.next_triggered_at) - Date.now());
          harness.server.app.wakeUps.wake('runs');

          const finished = await harness.waitForRun(runName, ['done', 'failed', 'terminated'], 240_000);
          expect(finished.status).toBe('done');
          const submissions = finished.jobs[0]?.job_submissions ?? [];
          expect(submissions.map((submission) => submission.termination_reason)).toEqual([
            'interrupted_by_no_capacity',
            'done_by_runner',
          ]);
          const second = provisionedInstance(finished);
          expect(second.id).not.toBe(first.id);

          // The run is done and its spot instance idle in the fleet: the cloud takes it back, and the
          // next instance pass (its shim silent, the provider saying so) ends it, not the 20-minute
          // unreachable limit. A cloud that deletes in steps (Nebius: the instance, then its disk) goes
          // through terminating first.
          const instanceRow = () =>
            harness.server.app.db
              .selectFrom('instances')
              .select(['status', 'termination_reason', 'termination_reason_message'])
              .where('job_provisioning_data', 'like', `%"instance_id":"${second.id}"%`)
              .executeTakeFirstOrThrow();
          await waitFor('the instance to be idle', async () =>
            (await instanceRow()).status === 'idle' ? true : null,
          );
          emulator.interruptSpot(second.id);
          const ended = await waitFor(
            'the instance to end',
            async () => {
              const row = await instanceRow();
              return row.status === 'idle' || row.status === 'terminating' ? null : row;
            },
            120_000,
          );
          expect(ended).toEqual({
            status: 'terminated',
            termination_reason: 'unreachable',
            termination_reason_message: 'the provider took the spot instance back',
          });
          const fleets = await harness.call<Array<{ name: string }>>('/api/project/main/fleets/list');
          if (fleets.body.some((fleet) => fleet.name === runName)) await deleteFleet(harness, runName);
        },
        420_000,
      );

      it.runIf(runsScenario('no-agent'))(
        'fails the run soon, with the bootstrap log, when the host cannot download the agent runtime',
        async () => {
          const runName = `${cloud}-no-agent`;
          // A 404 the bootstrap does not try again (its retries of a 503 are core's unit test's);
          // the server reads why at once, far before the 10-minute provisioning timeout.
          tarball.failDownloads(404);
          try {
            await applyTask(harness, task(runName, ['echo never']));
            const finished = await harness.waitForRun(runName, ['done', 'failed', 'terminated'], 150_000);
            expect(finished.status).not.toBe('done');
            const message = finished.jobs[0]?.job_submissions.at(-1)?.termination_reason_message ?? '';
            expect(message).toContain("the instance's bootstrap failed: cannot download the agent runtime");
            expect(message).toContain(
              `${AGENT_BOOTSTRAP_FAILURE_MARKER} cannot download the agent runtime from ${tarball.url}`,
            );
          } finally {
            tarball.failDownloads(null);
          }
          await deleteFleet(harness, runName).catch(() => undefined);
        },
        300_000,
      );
    }

    scenarios.more?.({
      harness: () => harness,
      hosts: () => hosts,
      defaultImages: () => defaultImages,
      smallImage: () => smallImage,
      emulatorName,
    });
  });
}
