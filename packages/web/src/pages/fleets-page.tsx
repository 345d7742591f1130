import type { Fleet, Project } from '@dstack/core';
import { projectPath } from '../api';
import { LoadState, Status, Table } from '../components';
import { formatAge, formatCost } from '../format';
import { useSession } from '../session';
import { useData } from '../use-data';

/** The fleets of every project the user is in, each with its instances. */
export function FleetsPage() {
  const { api } = useSession();
  const fleets = useData(
    async () => {
      const projects = await api.post<Project[]>('/api/projects/list');
      const perProject = await Promise.all(
        projects.map((project) => api.post<Fleet[]>(projectPath(project.project_name, 'fleets/list'))),
      );
      return perProject.flat();
    },
    [api],
    5000,
  );
  return (
    <section>
      <h1>Fleets</h1>
      <LoadState error={fleets.error} loading={!fleets.data} />
      {fleets.data?.length === 0 && <p className="muted">No fleets.</p>}
      {fleets.data?.map((fleet) => (
        <article key={fleet.id} className="card" data-fleet={fleet.name}>
          <h2>
            {fleet.name} <Status status={fleet.status} label={fleet.status_message} />
          </h2>
          <p className="muted">
            {fleet.project_name} · created {formatAge(fleet.created_at)}
          </p>
          <Table
            head={['Instance', 'Status', 'Backend', 'Region', 'Type', 'Price/h', 'Blocks']}
            empty="No instances."
          >
            {fleet.instances.map((instance) => (
              <tr key={instance.id}>
                <td>{instance.name}</td>
                <td>
                  <Status status={instance.status} label={instance.unreachable ? 'unreachable' : null} />
                </td>
                <td>{instance.backend ?? '-'}</td>
                <td>{instance.region ?? '-'}</td>
                <td>{instance.instance_type?.name ?? '-'}</td>
                <td>{formatCost(instance.price)}</td>
                <td>
                  {instance.busy_blocks}/{instance.total_blocks ?? 1}
                </td>
              </tr>
            ))}
          </Table>
        </article>
      ))}
    </section>
  );
}
