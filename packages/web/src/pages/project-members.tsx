import type { Member, ProjectRole } from '@dstack/core';
import { type FormEvent, useState } from 'react';
import { RowAction, Table } from '../components';
import { useSession } from '../session';
import { useAction } from '../use-action';
import type { ProjectRights } from './project-rights';

const ROLES: readonly ProjectRole[] = ['user', 'manager', 'admin'];

function RoleSelect({
  value,
  onChange,
  disabled,
  label,
}: {
  value: ProjectRole;
  onChange(role: ProjectRole): void;
  disabled?: boolean;
  label: string;
}) {
  return (
    <select
      className="role"
      aria-label={label}
      value={value}
      disabled={disabled}
      onChange={(event) => onChange(event.target.value as ProjectRole)}
    >
      {ROLES.map((role) => (
        <option key={role} value={role}>
          {role}
        </option>
      ))}
    </select>
  );
}

/** Members and their roles: `add_members` adds a user or changes their role, `remove_members` removes them. */
export function ProjectMembers({
  project,
  members,
  rights,
  onChange,
}: {
  project: string;
  members: readonly Member[];
  rights: ProjectRights;
  onChange(): void;
}) {
  const { api } = useSession();
  const action = useAction();
  const [username, setUsername] = useState('');
  const [role, setRole] = useState<ProjectRole>('user');
  const route = (name: string) => `/api/projects/${encodeURIComponent(project)}/${name}`;

  const setMember = async (member: string, memberRole: ProjectRole): Promise<boolean> => {
    const done = await action.run(member, () =>
      api.post(route('add_members'), { members: [{ username: member, project_role: memberRole }] }),
    );
    if (done) onChange();
    return done;
  };
  const add = async (event: FormEvent) => {
    event.preventDefault();
    if (await setMember(username.trim(), role)) setUsername('');
  };

  return (
    <>
      <h2>Members</h2>
      <Table head={rights.manageMembers ? ['User', 'Role', ''] : ['User', 'Role']} empty="No members.">
        {members.map((member) => (
          <tr key={member.user.id} data-member={member.user.username}>
            <td>{member.user.username}</td>
            <td>
              {rights.manageMembers ? (
                <RoleSelect
                  label={`Role of ${member.user.username}`}
                  value={member.project_role}
                  disabled={action.busy !== null}
                  onChange={(next) => void setMember(member.user.username, next)}
                />
              ) : (
                member.project_role
              )}
            </td>
            {rights.manageMembers && (
              <td>
                <RowAction
                  action={action}
                  label="Remove"
                  work={() => api.post(route('remove_members'), { usernames: [member.user.username] })}
                  onDone={onChange}
                />
              </td>
            )}
          </tr>
        ))}
      </Table>
      {rights.manageMembers && (
        <form className="filters form-row" onSubmit={add} aria-label="Add member">
          <label>
            Username
            <input
              name="member"
              value={username}
              onChange={(event) => setUsername(event.target.value)}
              required
            />
          </label>
          <RoleSelect label="Role of the new member" value={role} onChange={setRole} />
          <button type="submit" disabled={action.busy !== null || username.trim() === ''}>
            Add member
          </button>
        </form>
      )}
      {action.error && <p className="error">{action.error}</p>}
    </>
  );
}
