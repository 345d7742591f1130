/**
 * dstack's service `probes`: the run pipeline sends each running replica every probe of the
 * service, each at its `interval`, with its `method`, `headers`, `body` and `timeout`. A 2xx
 * answer is a success; a replica is ready once every probe has succeeded `ready_after` times in
 * a row (`until_ready`: then it is no longer probed), and it is not ready again from its first
 * failure. `jobs.probes_ready` holds the answer; the service proxy sends requests only to ready
 * replicas. A replica that was ready and then fails `FAILURES_TO_REPLACE` probes in a row is
 * reported for replacement.
 */
import type { ServiceConfiguration } from '@dstack/core';
import { type Dispatcher, request } from 'undici';
import { AgentUnreachableError } from '../agents/agent-unreachable-error.js';
import type { AppContext } from '../context.js';
import type { JobsTable, ProjectsTable } from '../db/schema.js';
import type { ProbeState } from './probe-state.js';
import { replicaBaseUrl } from './replica-address.js';
import { markServiceGatewayDue } from './service-gateway.js';
import { servicePortOf } from './service-spec.js';

type Probe = NonNullable<ServiceConfiguration['probes']>[number];

/** Failed probes in a row, after being ready, that make a replica be replaced. */
export const FAILURES_TO_REPLACE = 3;

/**
 * Whether one probe of `url` succeeds: a 2xx answer within its timeout. Each probe is sent on a new
 * connection (`reset`), as Kubernetes's HTTP probes are: a kept-alive connection could pass while
 * the replica accepts no new one, or reach another process sharing the port.
 */
async function probeOnce(baseUrl: string, probe: Probe): Promise<boolean> {
  try {
    // The probe's path on the replica, appended rather than resolved: resolving `//host/…` (a
    // `url` that starts with `/`, as the configuration requires) would probe another host.
    const response = await request(`${baseUrl}${probe.url}`, {
      method: probe.method.toUpperCase() as Dispatcher.HttpMethod,
      headers: Object.fromEntries(probe.headers.map((header) => [header.name, header.value])),
      ...(probe.body !== undefined ? { body: probe.body } : {}),
      reset: true,
      signal: AbortSignal.timeout(probe.timeout * 1000),
    });
    await response.body.dump().catch(() => undefined);
    return response.statusCode >= 200 && response.statusCode < 300;
  } catch {
    return false;
  }
}

export interface ProbeOutcome {
  /** Replicas (master job ids) that were ready and have failed their probes since: replace them. */
  failed: string[];
  /** ms until the next probe is due, or null when nothing is probed. */
  nextInMs: number | null;
}

/**
 * Probes the running replicas of `service` that are due and writes each one's readiness
 * when it changes. `replicas` are the master jobs (`job_num` 0) of the run.
 */
export async function probeReplicas(
  app: AppContext,
  project: ProjectsTable,
  service: ServiceConfiguration,
  replicas: readonly JobsTable[],
): Promise<ProbeOutcome> {
  const probes = service.probes ?? [];
  const states = app.caches.services.probeStates;
  const outcome: ProbeOutcome = { failed: [], nextInMs: null };
  if (probes.length === 0) return outcome;
  const now = Date.now();
  const interval = Math.min(...probes.map((probe) => probe.interval)) * 1000;
  await Promise.all(
    replicas.map(async (job) => {
      if (job.status !== 'running') {
        states.delete(job.id);
        return;
      }
      const state: ProbeState = states.get(job.id) ?? {
        successes: probes.map(() => 0),
        nextAt: now,
        wasReady: false,
        failures: 0,
      };
      states.set(job.id, state);
      const ready = probes.every((probe, index) => (state.successes[index] ?? 0) >= probe.ready_after);
      if (ready && probes.every((probe) => probe.until_ready)) return;
      if (state.nextAt > now) {
        outcome.nextInMs = Math.min(outcome.nextInMs ?? Number.POSITIVE_INFINITY, state.nextAt - now);
        return;
      }
      let baseUrl: string | null = null;
      try {
        baseUrl = await replicaBaseUrl(app, project, job, servicePortOf(service));
      } catch (error) {
        if (!AgentUnreachableError.isInstance(error)) throw error;
      }
      const results = await Promise.all(
        probes.map((probe) => (baseUrl === null ? false : probeOnce(baseUrl, probe))),
      );
      state.successes = results.map((passed, index) => (passed ? (state.successes[index] ?? 0) + 1 : 0));
      state.nextAt = Date.now() + interval;
      outcome.nextInMs = Math.min(outcome.nextInMs ?? Number.POSITIVE_INFINITY, interval);
      const nowReady = probes.every((probe, index) => (state.successes[index] ?? 0) >= probe.ready_after);
      if (nowReady) {
        state.wasReady = true;
        state.failures = 0;
      } else if (state.wasReady && results.includes(false)) {
        state.failures += 1;
      }
      if ((job.probes_ready === 1) !== nowReady) {
        await app.db
          .updateTable('jobs')
          .set({ probes_ready: nowReady ? 1 : 0 })
          .where('id', '=', job.id)
          .execute();
        await markServiceGatewayDue(app, job.run_id);
      }
    }),
  );
  // Every replica past its failures, probed this pass or not: one whose stop did not take (a job
  // pipeline held it) is reported again on the next pass until it is stopped.
  for (const job of replicas) {
    const state = states.get(job.id);
    if (state?.wasReady && state.failures >= FAILURES_TO_REPLACE) outcome.failed.push(job.id);
  }
  return outcome;
}

/** Forgets the probe state of jobs that are gone. */
export function forgetProbes(app: AppContext, jobIds: readonly string[]): void {
  for (const id of jobIds) app.caches.services.probeStates.delete(id);
}
