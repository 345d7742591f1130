import type { GlobalRole, User, UserWithCreds } from '@dstack/core';
import { type FormEvent, useState } from 'react';
import { LoadState, RowAction, Table } from '../components';
import { formatAge } from '../format';
import { useSession } from '../session';
import { useAction } from '../use-action';
import { useData } from '../use-data';

/**
 * `users/create`: the answer holds the new user's token, which the server keeps only hashed, so
 * it is shown here once, until the admin dismisses it.
 */
function CreateUserForm({ onCreated }: { onCreated(): void }) {
  const { api } = useSession();
  const action = useAction();
  const [username, setUsername] = useState('');
  const [role, setRole] = useState<GlobalRole>('user');
  const [created, setCreated] = useState<UserWithCreds | null>(null);

  const submit = async (event: FormEvent) => {
    event.preventDefault();
    setCreated(null);
    await action.run('create', async () => {
      setCreated(
        await api.post<UserWithCreds>('/api/users/create', { username: username.trim(), global_role: role }),
      );
      setUsername('');
      onCreated();
    });
  };
  return (
    <>
      <form className="filters form-row" onSubmit={submit} aria-label="New user">
        <label>
          New user
          <input
            name="username"
            value={username}
            onChange={(event) => setUsername(event.target.value)}
            required
          />
        </label>
        <label>
          Global role
          <select
            name="global_role"
            value={role}
            onChange={(event) => setRole(event.target.value as GlobalRole)}
          >
            <option value="user">user</option>
            <option value="admin">admin</option>
          </select>
        </label>
        <button type="submit" disabled={action.busy !== null || username.trim() === ''}>
          Create
        </button>
      </form>
      {action.error && <p className="error">{action.error}</p>}
      {created && (
        <div className="notice" data-testid="new-user-token">
          <p>
            The token of <strong>{created.username}</strong>, shown only now: hand it to them (they sign in
            with it and put it in their CLI's config).
          </p>
          <code>{created.creds.token}</code>
          <button type="button" className="link" onClick={() => setCreated(null)}>
            Done
          </button>
        </div>
      )}
    </>
  );
}

/** Every user of the server; for global admins only (the server lists only themselves to others). */
export function UsersPage() {
  const { api, user } = useSession();
  const users = useData(
    () => (user.global_role === 'admin' ? api.post<User[]>('/api/users/list') : Promise.resolve([])),
    [api, user.global_role],
  );
  const action = useAction();
  if (user.global_role !== 'admin') {
    return (
      <section>
        <h1>Users</h1>
        <p className="error">Only global admins manage users.</p>
      </section>
    );
  }
  // `users/update` sets both: the role is sent back unchanged.
  const setActive = (listed: User, active: boolean) =>
    api.post<User>('/api/users/update', {
      username: listed.username,
      global_role: listed.global_role,
      active,
    });
  return (
    <section>
      <h1>Users</h1>
      <CreateUserForm onCreated={users.reload} />
      {action.error && <p className="error">{action.error}</p>}
      <LoadState error={users.error} loading={!users.data} />
      {users.data && (
        <Table head={['User', 'Role', 'Active', 'Created', '']} empty="No users.">
          {users.data.map((listed) => (
            <tr key={listed.id} data-user={listed.username}>
              <td>{listed.username}</td>
              <td>{listed.global_role}</td>
              <td>{listed.active ? 'yes' : 'no'}</td>
              <td>{formatAge(listed.created_at)}</td>
              <td>
                {listed.id !== user.id && listed.username !== 'admin' && (
                  <RowAction
                    action={action}
                    label={listed.active ? 'Deactivate' : 'Activate'}
                    work={() => setActive(listed, !listed.active)}
                    onDone={users.reload}
                  />
                )}
              </td>
            </tr>
          ))}
        </Table>
      )}
    </section>
  );
}
