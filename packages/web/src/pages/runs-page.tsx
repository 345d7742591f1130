import type { Run } from '@dstack/core';
import { LoadState, Status, Table } from '../components';
import { formatAge, formatCost } from '../format';
import { Link } from '../router';
import { useSession } from '../session';
import { useData } from '../use-data';

const runPath = (run: Run) =>
  `/runs/${encodeURIComponent(run.project_name)}/${encodeURIComponent(run.run_spec.run_name ?? '')}`;

/** Every run the user can see, across projects, newest first (`runs/list`, as `dstack ps -a`). */
export function RunsPage() {
  const { api } = useSession();
  const runs = useData(() => api.post<Run[]>('/api/runs/list', { limit: 100 }), [api], 3000);
  return (
    <section>
      <h1>Runs</h1>
      <LoadState error={runs.error} loading={!runs.data} />
      {runs.data && (
        <Table
          head={['Run', 'Status', 'Cost', 'Project', 'Submitted']}
          empty="No runs yet: dstack apply -f …"
        >
          {runs.data.map((run) => (
            <tr key={run.id} data-run={run.run_spec.run_name}>
              <td>
                <Link href={runPath(run)}>{run.run_spec.run_name}</Link>
              </td>
              <td>
                <Status status={run.status} label={run.status_message} />
              </td>
              <td>{formatCost(run.cost)}</td>
              <td>{run.project_name}</td>
              <td>{formatAge(run.submitted_at)}</td>
            </tr>
          ))}
        </Table>
      )}
    </section>
  );
}
