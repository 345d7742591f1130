import type { Project, Secret } from '@dstack/core';
import { projectPath } from '../api';
import { LoadState } from '../components';
import { navigate } from '../router';
import { useSession } from '../session';
import { useAction } from '../use-action';
import { useData } from '../use-data';
import { type BackendInfo, ProjectBackends } from './project-backends';
import { ProjectMembers } from './project-members';
import { rightsOf } from './project-rights';
import { ProjectSecrets } from './project-secrets';

/**
 * A project's members, backends (creds are never sent back) and its secrets' names (values are
 * never fetched: `secrets/list` has none), with the forms that change them.
 */
export function ProjectPage({ project }: { project: string }) {
  const { api, user } = useSession();
  const details = useData(async () => {
    const [info, backends, secrets] = await Promise.all([
      api.post<Project>(`/api/projects/${encodeURIComponent(project)}/get`),
      api.post<BackendInfo[]>(projectPath(project, 'backends/list')),
      api.post<Secret[]>(projectPath(project, 'secrets/list')),
    ]);
    return { info, backends, secrets };
  }, [api, project]);
  const deletion = useAction();
  const data = details.data;
  const rights = data ? rightsOf(data.info, user) : null;

  const deleteProject = async () => {
    if (!confirm(`Delete project ${project}? Its runs, fleets, backends and secrets go with it.`)) return;
    const deleted = await deletion.run('delete', () =>
      api.post('/api/projects/delete', { projects_names: [project] }),
    );
    if (deleted) navigate('/projects', { replace: true });
  };

  return (
    <section>
      <h1>{project}</h1>
      <LoadState error={details.error} loading={!data} />
      {data && rights && (
        <>
          {rights.role && <p className="muted">Your role: {rights.role}</p>}
          <ProjectMembers
            project={project}
            members={data.info.members}
            rights={rights}
            onChange={details.reload}
          />
          <ProjectBackends
            project={project}
            backends={data.backends}
            rights={rights}
            onChange={details.reload}
          />
          <ProjectSecrets
            project={project}
            secrets={data.secrets}
            rights={rights}
            onChange={details.reload}
          />
          {rights.administer && (
            <>
              <h2>Danger zone</h2>
              <button
                type="button"
                className="danger"
                disabled={deletion.busy !== null}
                onClick={deleteProject}
              >
                {deletion.busy ? 'Deleting…' : 'Delete project'}
              </button>
              {deletion.error && <p className="error">{deletion.error}</p>}
            </>
          )}
        </>
      )}
    </section>
  );
}
