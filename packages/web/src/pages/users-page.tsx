import type { User } from '@dstack/core';
import { LoadState, Table } from '../components';
import { formatAge } from '../format';
import { useSession } from '../session';
import { useData } from '../use-data';

/** Every user of the server; for global admins only (the server lists only themselves to others). */
export function UsersPage() {
  const { api, user } = useSession();
  const users = useData(
    () => (user.global_role === 'admin' ? api.post<User[]>('/api/users/list') : Promise.resolve([])),
    [api, user.global_role],
  );
  if (user.global_role !== 'admin') {
    return (
      <section>
        <h1>Users</h1>
        <p className="error">Only global admins manage users.</p>
      </section>
    );
  }
  return (
    <section>
      <h1>Users</h1>
      <LoadState error={users.error} loading={!users.data} />
      {users.data && (
        <Table head={['User', 'Role', 'Active', 'Created']} empty="No users.">
          {users.data.map((listed) => (
            <tr key={listed.id}>
              <td>{listed.username}</td>
              <td>{listed.global_role}</td>
              <td>{listed.active ? 'yes' : 'no'}</td>
              <td>{formatAge(listed.created_at)}</td>
            </tr>
          ))}
        </Table>
      )}
    </section>
  );
}
