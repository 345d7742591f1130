import type { Project, ProjectRole } from '@dstack/core';

/** What the signed-in user may do on a project's pages: global admins are every project's admin, as in dstack. */
export interface ProjectRights {
  role: ProjectRole | null;
  /** Members: project admins and managers (managers only for the `user` role, the server checks). */
  manageMembers: boolean;
  /** Backends, secrets and the project itself: project admins. */
  administer: boolean;
}

export function rightsOf(project: Project, user: { id: string; global_role: string }): ProjectRights {
  const role = project.members.find((member) => member.user.id === user.id)?.project_role ?? null;
  const administer = user.global_role === 'admin' || role === 'admin';
  return { role, administer, manageMembers: administer || role === 'manager' };
}
