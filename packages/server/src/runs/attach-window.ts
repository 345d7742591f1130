/**
 * The attach window, for dstack's own Python client: its `dstack apply` attaches only to a job it
 * has seen running, and it looks every 1–5 s. dstack's server looks at a running job at most every
 * 10 s, so there a task that ends at once is still running when the client looks; this server ends
 * it in well under a second, and dstack's client fails (`Failed to find replica`). So a job of a run
 * submitted by dstack's client (it sends `X-API-VERSION`), whose runner reports its end within
 * `DSTACK_SERVER_ATTACH_WINDOW_SECONDS` of its start, is still shown running until the window ends,
 * while the server has an SSH proxy to attach through. Runs submitted by this project's CLI (it
 * streams logs and needs no window) end at once.
 *
 * Kept in this process's memory (`app.caches.runs.attachWindow`): after a restart, or on another
 * server replica, such a job ends at once, as without the window.
 */
import type { AppContext } from '../context.js';

/** Runs submitted by dstack's client are forgotten an hour later (a run starts long before). */
const POLLING_CLIENT_RUN_TTL_MS = 3_600_000;

function forgetOlderThan(entries: Map<string, number>, ageMs: number, now: number): void {
  for (const [id, since] of entries) if (now - since >= ageMs) entries.delete(id);
}

/** Notes a run submitted by a client that attaches by polling (dstack's own). */
export function expectPollingAttach(app: AppContext, runId: string, now: number): void {
  if (app.settings.sshProxy.attachWindowMs <= 0 || !app.sshProxy) return;
  const { pollingClientRuns } = app.caches.runs.attachWindow;
  forgetOlderThan(pollingClientRuns, POLLING_CLIENT_RUN_TTL_MS, now);
  pollingClientRuns.set(runId, now);
}

/** Notes a job's start when its run expects a polling attach; starts older than the window are forgotten. */
export function rememberRunningSince(
  app: AppContext,
  job: { id: string; run_id: string },
  now: number,
): void {
  const windowMs = app.settings.sshProxy.attachWindowMs;
  const { pollingClientRuns, runningSince } = app.caches.runs.attachWindow;
  if (windowMs <= 0 || !app.sshProxy || !pollingClientRuns.has(job.run_id)) return;
  forgetOlderThan(runningSince, windowMs, now);
  runningSince.set(job.id, now);
}

/** True while a job that has ended must still be shown running (see the module's comment). */
export function endShownLater(app: AppContext, jobId: string, now: number): boolean {
  const { runningSince } = app.caches.runs.attachWindow;
  const since = runningSince.get(jobId);
  const windowMs = app.settings.sshProxy.attachWindowMs;
  if (since === undefined || !app.sshProxy || windowMs <= 0 || now - since >= windowMs) {
    runningSince.delete(jobId);
    return false;
  }
  return true;
}
