import type { Project } from '@dstack/core';
import { type FormEvent, useState } from 'react';
import { LoadState, Table } from '../components';
import { formatAge } from '../format';
import { Link, navigate } from '../router';
import { useSession } from '../session';
import { useAction } from '../use-action';
import { useData } from '../use-data';

export const projectPagePath = (project: string) => `/projects/${encodeURIComponent(project)}`;

/** `projects/create`: the creator becomes the project's admin (any user may create one, as in dstack). */
function CreateProjectForm() {
  const { api } = useSession();
  const action = useAction();
  const [name, setName] = useState('');
  const submit = async (event: FormEvent) => {
    event.preventDefault();
    const created = await action.run('create', () =>
      api.post<Project>('/api/projects/create', { project_name: name.trim() }),
    );
    if (created) navigate(projectPagePath(name.trim()));
  };
  return (
    <form className="filters" onSubmit={submit} aria-label="New project">
      <label>
        New project
        <input name="project_name" value={name} onChange={(event) => setName(event.target.value)} required />
      </label>
      <button type="submit" disabled={action.busy !== null || name.trim() === ''}>
        {action.busy ? 'Creating…' : 'Create'}
      </button>
      {action.error && <p className="error">{action.error}</p>}
    </form>
  );
}

export function ProjectsPage() {
  const { api } = useSession();
  const projects = useData(() => api.post<Project[]>('/api/projects/list'), [api]);
  return (
    <section>
      <h1>Projects</h1>
      <CreateProjectForm />
      <LoadState error={projects.error} loading={!projects.data} />
      {projects.data && (
        <Table head={['Project', 'Owner', 'Members', 'Backends', 'Created']} empty="You are in no project.">
          {projects.data.map((project) => (
            <tr key={project.project_id} data-project={project.project_name}>
              <td>
                <Link href={projectPagePath(project.project_name)}>{project.project_name}</Link>
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
