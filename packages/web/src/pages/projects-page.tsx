import type { Project, Secret } from '@dstack/core';
import { projectPath } from '../api';
import { LoadState, Table } from '../components';
import { formatAge } from '../format';
import { Link } from '../router';
import { useSession } from '../session';
import { useData } from '../use-data';

export function ProjectsPage() {
  const { api } = useSession();
  const projects = useData(() => api.post<Project[]>('/api/projects/list'), [api]);
  return (
    <section>
      <h1>Projects</h1>
      <LoadState error={projects.error} loading={!projects.data} />
      {projects.data && (
        <Table head={['Project', 'Owner', 'Members', 'Backends', 'Created']} empty="You are in no project.">
          {projects.data.map((project) => (
            <tr key={project.project_id}>
              <td>
                <Link href={`/projects/${encodeURIComponent(project.project_name)}`}>
                  {project.project_name}
                </Link>
              </td>
              <td>{project.owner.username}</td>
              <td>{project.members.length}</td>
              <td>{project.backends.map((backend) => backend.name).join(', ') || '-'}</td>
              <td>{formatAge(project.created_at)}</td>
            </tr>
          ))}
        </Table>
      )}
    </section>
  );
}

/** What `backends/list` answers: the config without its creds (the server never sends them back). */
interface BackendInfo {
  name: string;
  config: Record<string, unknown> | null;
  error?: string;
}

/** Regions, or the other fields a backend is told apart by, without nesting. */
function describeBackend(config: Record<string, unknown> | null): string {
  if (!config) return '-';
  return Object.entries(config)
    .filter(([key, value]) => key !== 'type' && value !== null && typeof value !== 'object')
    .concat(Array.isArray(config.regions) ? [['regions', config.regions.join(', ')]] : [])
    .map(([key, value]) => `${key}: ${String(value)}`)
    .join('; ');
}

/**
 * A project's members, backends (creds are never sent back) and its secrets' names (values are
 * never fetched: `secrets/list` has none).
 */
export function ProjectPage({ project }: { project: string }) {
  const { api } = useSession();
  const details = useData(async () => {
    const [info, backends, secrets] = await Promise.all([
      api.post<Project>(`/api/projects/${encodeURIComponent(project)}/get`),
      api.post<BackendInfo[]>(projectPath(project, 'backends/list')),
      api.post<Secret[]>(projectPath(project, 'secrets/list')),
    ]);
    return { info, backends, secrets };
  }, [api, project]);
  return (
    <section>
      <h1>{project}</h1>
      <LoadState error={details.error} loading={!details.data} />
      {details.data && (
        <>
          <h2>Members</h2>
          <Table head={['User', 'Role']} empty="No members.">
            {details.data.info.members.map((member) => (
              <tr key={member.user.id}>
                <td>{member.user.username}</td>
                <td>{member.project_role}</td>
              </tr>
            ))}
          </Table>
          <h2>Backends</h2>
          <Table head={['Backend', 'Settings', 'State']} empty="No backends.">
            {details.data.backends.map((backend) => (
              <tr key={backend.name}>
                <td>{backend.name}</td>
                <td>{describeBackend(backend.config)}</td>
                <td className={backend.error ? 'error' : undefined}>{backend.error ?? 'ok'}</td>
              </tr>
            ))}
          </Table>
          <h2>Secrets</h2>
          <Table head={['Name']} empty="No secrets.">
            {details.data.secrets.map((secret) => (
              <tr key={secret.id}>
                <td>{secret.name}</td>
              </tr>
            ))}
          </Table>
        </>
      )}
    </section>
  );
}
