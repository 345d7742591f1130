/** What the end-to-end tests of the cloud backends (on their emulators) ask of a harness server. */
import type { InstanceOfferWithAvailability, Run } from '@dstack/core';
import type {
  AwsEmulatorState,
  AzureEmulatorState,
  GcpEmulatorState,
  LambdaEmulatorState,
  NebiusEmulatorState,
  OciEmulatorState,
  VerdaEmulatorState,
} from '@dstack/testing/emulators';
import { expect } from 'vitest';
import { hostsLeft } from './emulated-hosts-harness.js';
import { applyTask, type HarnessServer, waitFor } from './server-harness.js';

/** A GPU task on an emulated cloud (the hosts have no GPU; the process runtime does not ask). */
export function gpuTask(name: string, commands: string[], extra: Record<string, unknown> = {}) {
  return { type: 'task', name, commands, resources: { gpu: 'T4' }, ...extra };
}

export interface JobPlan {
  offers: InstanceOfferWithAvailability[];
  /** Backends whose offers are missing from the plan, and why. */
  warnings: string[];
  /** When there are no offers: which requirement excluded how many. */
  exclusions: Array<{ requirement: string; excluded: number }>;
}

/** The plan of the run's first job. */
export async function planJob(
  harness: HarnessServer,
  configuration: Record<string, unknown>,
): Promise<JobPlan> {
  const answer = await harness.call<{ job_plans: JobPlan[] }>('/api/project/main/runs/get_plan', {
    run_spec: { configuration },
  });
  expect(answer.status).toBe(200);
  const jobPlan = answer.body.job_plans[0];
  if (!jobPlan) throw new Error('the plan has no job');
  return jobPlan;
}

/** Where the run's latest job ran. */
export function provisionedInstance(run: Run): {
  id: string;
  type: string;
  region: string;
  zone: string | null;
} {
  const data = run.latest_job_submission?.job_provisioning_data;
  if (!data) throw new Error(`run ${run.run_spec.run_name} has no provisioning data`);
  return {
    id: data.instance_id,
    type: data.instance_type.name,
    region: data.region,
    zone: data.availability_zone ?? null,
  };
}

/** Deletes fleet `name` and waits until the server no longer lists it. */
export async function deleteFleet(harness: HarnessServer, name: string): Promise<void> {
  const deleted = await harness.call('/api/project/main/fleets/delete', { names: [name] });
  expect(deleted.status, JSON.stringify(deleted.body)).toBe(200);
  await waitFor(
    `fleet ${name} to be gone`,
    async () => {
      const fleets = await harness.call<Array<{ name: string }>>('/api/project/main/fleets/list');
      return fleets.body.some((fleet) => fleet.name === name) ? null : true;
    },
    120_000,
  );
}

/**
 * Deletes every fleet of the project and waits until they are gone. For runs applied together: a
 * run that is placed after another ended takes that run's idle instance rather than a fleet of its
 * own, as in dstack, so which fleets exist depends on timing.
 */
export async function deleteAllFleets(harness: HarnessServer): Promise<void> {
  const fleets = await harness.call<Array<{ name: string }>>('/api/project/main/fleets/list');
  await Promise.all(fleets.body.map((fleet) => deleteFleet(harness, fleet.name)));
}

/** An emulated cloud whose leftovers `expectCloudEmpty` looks for. */
export interface EmulatedCloudState {
  state():
    | AwsEmulatorState
    | GcpEmulatorState
    | AzureEmulatorState
    | LambdaEmulatorState
    | NebiusEmulatorState
    | OciEmulatorState
    | VerdaEmulatorState;
}

/** What the cloud still holds that a finished test should have let go, described; empty when nothing. */
export function cloudLeftovers(emulator: EmulatedCloudState): string[] {
  const state = emulator.state();
  // Azure: a deleted VM must take its disk, NIC and public IP with it.
  if ('virtualMachines' in state) {
    return [
      ...state.virtualMachines.map((each) => `VM ${each.name} ${each.state}`),
      ...state.disks.map((each) => `disk ${each.name}`),
      ...state.networkInterfaces.map((each) => `NIC ${each.name}`),
      ...state.publicIpAddresses.map((each) => `public IP ${each.name}`),
    ];
  }
  if ('provider' in state && state.provider === 'oci') {
    // OCI: a terminated instance stays readable as TERMINATED; its VNIC and boot volume are gone.
    return [
      ...state.instances
        .filter((each) => each.state !== 'TERMINATED')
        .map((each) => `instance ${each.id} ${each.state}`),
      ...state.vnics.map((each) => `VNIC ${each}`),
      ...state.bootVolumes.map((each) => `boot volume ${each}`),
    ];
  }
  if ('provider' in state && state.provider === 'nebius') {
    // Nebius: a deleted instance is DELETING, then gone; its boot disk is deleted after it.
    return [
      ...state.instances
        .filter((each) => each.state !== 'DELETING')
        .map((each) => `instance ${each.id} ${each.state}`),
      ...state.disks.map((each) => `disk ${each.name}`),
    ];
  }
  if ('provider' in state) {
    // Lambda and Verda: a deleted instance is `terminating` / `deleting` (its host already gone), then forgotten.
    const ending = new Set(['terminating', 'terminated', 'deleting', 'discontinued']);
    return [
      ...state.instances
        .filter((each) => !ending.has(each.status))
        .map((each) => `instance ${each.id} ${each.status}`),
      ...('startupScripts' in state
        ? [...state.sshKeys, ...state.startupScripts].map((each) => `instance resource ${each.name}`)
        : []),
    ];
  }
  if ('placementGroups' in state) {
    return [
      ...state.instances
        .filter((each) => each.state !== 'terminated')
        .map((each) => `instance ${each.id} ${each.state}`),
      ...state.volumes
        .filter((each) => each.attachment)
        .map((each) => `volume ${each.id} attached to ${each.attachment?.instanceId}`),
      ...state.placementGroups.map((each) => `placement group ${each.name}`),
      ...state.loopDevices.map((each) => `loop device ${each.path} of ${each.volumeId}`),
    ];
  }
  // A deleted GCP instance is gone from the list; a stopped one (TERMINATED) is still held.
  return [
    ...state.instances.map((each) => `instance ${each.id} ${each.state}`),
    ...state.disks
      .filter((each) => each.attachedTo)
      .map((each) => `disk ${each.name} attached to ${each.attachedTo?.instance}`),
    ...state.resourcePolicies.map((each) => `resource policy ${each.name}`),
  ];
}

/**
 * Waits until the emulated cloud holds no live instance, attached volume or placement group
 * (AWS: groups and loop devices; GCP: compact placement policies), and, given the emulator name
 * its hosts are labelled with, until no host container is left; fails naming what is left.
 */
export async function expectCloudEmpty(
  emulator: EmulatedCloudState,
  options: { hostsOf?: string; timeoutMs?: number } = {},
): Promise<void> {
  const { hostsOf, timeoutMs = 120_000 } = options;
  const deadline = Date.now() + timeoutMs;
  const cloudEmpty = await waitFor(
    'the emulated cloud to be empty',
    () => (cloudLeftovers(emulator).length === 0 ? true : null),
    timeoutMs,
  ).catch(() => false);
  if (!cloudEmpty) expect(cloudLeftovers(emulator), 'left in the emulated cloud').toEqual([]);
  if (!hostsOf) return;
  // A terminated instance's host container goes a moment later.
  const hostsGone = await waitFor(
    'the hosts to be gone',
    async () => ((await hostsLeft(hostsOf)).length === 0 ? true : null),
    Math.max(deadline - Date.now(), 10_000),
  ).catch(() => false);
  if (!hostsGone) expect(await hostsLeft(hostsOf), 'host containers left').toEqual([]);
}

/** Where one node of a cluster run ran, by rank. */
export interface ClusterNode {
  instance: string;
  zone: string;
  internalIp: string;
}

/** The nodes of a run's latest submissions, by rank. */
export function clusterNodes(run: Run): ClusterNode[] {
  return run.jobs.map((job) => {
    const data = job.job_submissions.at(-1)?.job_provisioning_data;
    return {
      instance: data?.instance_id ?? '',
      zone: data?.availability_zone ?? '',
      internalIp: data?.internal_ip ?? '',
    };
  });
}

const MASTER_HELLO = 'hello from the master at';

/**
 * A `nodes: N` GPU task whose nodes print dstack's variables; the master serves a page over HTTP
 * on its port 7000 and every worker fetches it from the master's internal IP (tried until the
 * master listens: a request answered is a connection made, nothing lost in a race), and then all
 * sleep, so that a test can kill one; `retry` on error resubmits the whole run. It runs in `image`, a
 * busybox (its httpd and wget): the cluster is what is tested, not dstack's base image, which each
 * node of a stock VM image (AWS's Deep Learning AMI) would pull and set a venv up in.
 */
export function exchangingClusterTask(
  name: string,
  nodes: number,
  image: string,
  extra: Record<string, unknown> = {},
) {
  return gpuTask(
    name,
    [
      'echo "node rank=$DSTACK_NODE_RANK nodes=$DSTACK_NODES_NUM master=$DSTACK_MASTER_NODE_IP ips=$(echo $DSTACK_NODES_IPS)"',
      'if [ "$DSTACK_NODE_RANK" = 0 ]; then ' +
        `mkdir -p /tmp/www && echo "${MASTER_HELLO} $DSTACK_MASTER_NODE_IP" > /tmp/www/hello && httpd -p 7000 -h /tmp/www; ` +
        'else until reply=$(wget -q -O - "http://$DSTACK_MASTER_NODE_IP:7000/hello"); do sleep 1; done; ' +
        'echo "rank $DSTACK_NODE_RANK got: $reply"; fi',
      // The job's shell, then its sleep (the same process): what a test kills.
      'echo $$ > /tmp/dstack-node.pid',
      'exec sleep 600',
    ],
    { nodes, image, retry: { on_events: ['error'], duration: '1h' }, ...extra },
  );
}

async function currentRun(harness: HarnessServer, runName: string): Promise<Run> {
  const answer = await harness.call<Run>('/api/project/main/runs/get', { run_name: runName });
  expect(answer.status).toBe(200);
  return answer.body;
}

/** How many workers fetched the master's page, over every submission of the run. */
function masterReceipts(logs: string): number {
  return logs.split('\n').filter((line) => / got: hello from the master at /.test(line)).length;
}

/** A root shell on the host of an instance (by the id the server knows it by). */
export type HostShell = (instanceId: string, script: string) => Promise<string>;

/**
 * Applies `exchangingClusterTask` with `nodes` nodes in `image` (and `extra` fields) and checks dstack's cluster semantics on a
 * cloud: every node has its rank and the master's internal IP, every worker reached the master
 * there; then the job of the node of rank 1 is killed on its host (its process, in its container), which fails
 * it, ends the others (`terminated_by_server`) and, under `retry`, resubmits every node, which
 * exchange again. Stops the run and answers its nodes (first submissions) for the cloud's checks.
 */
export async function runKilledAndRetriedCluster(
  harness: HarnessServer,
  shell: HostShell,
  runName: string,
  nodes: number,
  image: string,
  extra: Record<string, unknown> = {},
): Promise<ClusterNode[]> {
  await applyTask(harness, exchangingClusterTask(runName, nodes, image, extra));
  const exchanged = async (rounds: number) => {
    await waitFor(
      `${rounds * (nodes - 1)} fetches of the master's page in ${runName}`,
      async () => {
        const run = await currentRun(harness, runName);
        if (['done', 'failed', 'terminated'].includes(run.status)) {
          throw new Error(`run ${runName} ended ${run.status}: ${await harness.logs(runName)}`);
        }
        return masterReceipts(await harness.logs(runName)) >= rounds * (nodes - 1) ? run : null;
      },
      300_000,
    );
  };
  await exchanged(1);
  const running = await harness.waitForRun(runName, ['running']);
  const first = clusterNodes(running);
  const master = first[0];
  if (!master || first.length !== nodes) throw new Error(`run ${runName} has ${first.length} nodes`);
  const logs = await harness.logs(runName);
  for (const [rank, node] of first.entries()) {
    expect(logs).toContain(
      `node rank=${rank} nodes=${nodes} master=${master.internalIp} ips=${first.map((each) => each.internalIp).join(' ')}`,
    );
    if (rank > 0) expect(logs).toContain(`rank ${rank} got: ${MASTER_HELLO} ${master.internalIp}`);
    expect(node.internalIp).not.toBe('');
  }
  expect(new Set(first.map((node) => node.instance)).size).toBe(nodes);

  const killed = first[1];
  if (!killed) throw new Error('no node of rank 1');
  // The job's process, not its container: the runner reports the exit at once.
  await shell(
    killed.instance,
    `for container in $(docker ps -q); do docker exec "$container" sh -c 'kill -9 "$(cat /tmp/dstack-node.pid)"'; done`,
  );
  const resubmitted = await waitFor(
    'every node to be resubmitted and running',
    async () => {
      const run = await currentRun(harness, runName);
      const latest = run.jobs.map((job) => job.job_submissions);
      return latest.every((submissions) => submissions.length === 2 && submissions[1]?.status === 'running')
        ? run
        : null;
    },
    180_000,
  );
  const reasons = resubmitted.jobs.map((job) => job.job_submissions[0]?.termination_reason);
  expect(reasons[1]).toBe('container_exited_with_error');
  expect(reasons.filter((_, rank) => rank !== 1)).toEqual(Array(nodes - 1).fill('terminated_by_server'));
  await exchanged(2);

  const stopped = await harness.call('/api/project/main/runs/stop', { runs_names: [runName], abort: false });
  expect(stopped.status).toBe(200);
  await harness.waitForRun(runName, ['terminated', 'failed', 'done'], 120_000);
  return first;
}
