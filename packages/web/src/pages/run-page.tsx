import type { Run } from '@dstack/core';
import { useState } from 'react';
import { projectPath } from '../api';
import { LoadState, Status, Table } from '../components';
import { FINISHED_RUN_STATUSES, formatAge, formatCost } from '../format';
import { navigate } from '../router';
import { useSession } from '../session';
import { useData } from '../use-data';
import { RunEvents } from './run-events';
import { RunLogs } from './run-logs';
import { RunMetrics } from './run-metrics';

/** One run: status, cost so far, its jobs, their resource use, its events, live logs, stop and delete. */
export function RunPage({ project, runName }: { project: string; runName: string }) {
  const { api } = useSession();
  const run = useData(
    () => api.post<Run>(projectPath(project, 'runs/get'), { run_name: runName }),
    [api, project, runName],
    2000,
  );
  const [acting, setActing] = useState<string | null>(null);
  const [actionError, setActionError] = useState<string | null>(null);

  const act = async (label: string, route: string, body: object, then?: () => void) => {
    setActing(label);
    setActionError(null);
    try {
      await api.post(projectPath(project, route), body);
      run.reload();
      then?.();
    } catch (error) {
      setActionError(error instanceof Error ? error.message : String(error));
    } finally {
      setActing(null);
    }
  };

  const data = run.data;
  const finished = data ? FINISHED_RUN_STATUSES.includes(data.status) : false;
  return (
    <section>
      <h1>{runName}</h1>
      <LoadState error={run.error} loading={!data} />
      {data && (
        <>
          <dl className="facts">
            <dt>Status</dt>
            <dd>
              <Status status={data.status} label={data.status_message} />
            </dd>
            <dt>Project</dt>
            <dd>{data.project_name}</dd>
            <dt>Cost</dt>
            <dd data-testid="run-cost">{formatCost(data.cost)}</dd>
            <dt>Type</dt>
            <dd>{data.run_spec.configuration.type}</dd>
            <dt>Submitted</dt>
            <dd>
              {formatAge(data.submitted_at)} by {data.user}
            </dd>
            {data.error && (
              <>
                <dt>Error</dt>
                <dd className="error">{data.error}</dd>
              </>
            )}
          </dl>
          <div className="actions">
            {!finished && (
              <button
                type="button"
                disabled={acting !== null}
                onClick={() => act('stop', 'runs/stop', { runs_names: [runName], abort: false })}
              >
                {acting === 'stop' ? 'Stopping…' : 'Stop'}
              </button>
            )}
            {finished && (
              <button
                type="button"
                className="danger"
                disabled={acting !== null}
                onClick={() => {
                  if (!confirm(`Delete run ${runName}?`)) return;
                  void act('delete', 'runs/delete', { runs_names: [runName] }, () =>
                    navigate('/runs', { replace: true }),
                  );
                }}
              >
                Delete
              </button>
            )}
          </div>
          {actionError && <p className="error">{actionError}</p>}
          <h2>Jobs</h2>
          <Table head={['Job', 'Status', 'Instance', 'Backend', 'Price/h']} empty="No jobs.">
            {data.jobs.map((job) => {
              const submission = job.job_submissions.at(-1);
              const provisioning = submission?.job_provisioning_data;
              return (
                <tr key={job.job_spec.job_name}>
                  <td>{job.job_spec.job_name}</td>
                  <td>
                    {submission && <Status status={submission.status} label={submission.status_message} />}
                  </td>
                  <td>{submission?.instance_name ?? '-'}</td>
                  <td>{provisioning?.backend ?? '-'}</td>
                  <td>{formatCost(provisioning?.price)}</td>
                </tr>
              );
            })}
          </Table>
          <h2>Metrics</h2>
          <RunMetrics project={project} runName={runName} jobs={data.jobs} live={!finished} />
          <h2>Events</h2>
          <RunEvents runId={data.id} live={!finished} />
          <h2>Logs</h2>
          <RunLogs project={project} runName={runName} />
        </>
      )}
    </section>
  );
}
