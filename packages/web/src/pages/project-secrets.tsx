import type { Secret } from '@dstack/core';
import { type FormEvent, useState } from 'react';
import { projectPath } from '../api';
import { RowAction, Table } from '../components';
import { useSession } from '../session';
import { useAction } from '../use-action';
import type { ProjectRights } from './project-rights';

/**
 * Secrets by name only: `secrets/list` carries no values, and a value typed here is sent once
 * (`secrets/create_or_update`, as `dstack secret set`) and cleared from the form.
 */
export function ProjectSecrets({
  project,
  secrets,
  rights,
  onChange,
}: {
  project: string;
  secrets: readonly Secret[];
  rights: ProjectRights;
  onChange(): void;
}) {
  const { api } = useSession();
  const action = useAction();
  const [name, setName] = useState('');
  const [value, setValue] = useState('');

  const save = async (event: FormEvent) => {
    event.preventDefault();
    const saved = await action.run('set', () =>
      api.post(projectPath(project, 'secrets/create_or_update'), { name: name.trim(), value }),
    );
    if (!saved) return;
    setName('');
    setValue('');
    onChange();
  };

  return (
    <>
      <h2>Secrets</h2>
      <Table head={rights.administer ? ['Name', ''] : ['Name']} empty="No secrets.">
        {secrets.map((secret) => (
          <tr key={secret.id} data-secret={secret.name}>
            <td>{secret.name}</td>
            {rights.administer && (
              <td>
                <RowAction
                  action={action}
                  label="Delete"
                  confirmation={`Delete secret ${secret.name}?`}
                  work={() =>
                    api.post(projectPath(project, 'secrets/delete'), { secrets_names: [secret.name] })
                  }
                  onDone={onChange}
                />
              </td>
            )}
          </tr>
        ))}
      </Table>
      {rights.administer && (
        <form className="filters form-row" onSubmit={save} aria-label="Set secret">
          <label>
            Secret name
            <input
              name="secret_name"
              value={name}
              onChange={(event) => setName(event.target.value)}
              required
            />
          </label>
          <label>
            Value
            <input
              name="secret_value"
              type="password"
              autoComplete="off"
              value={value}
              onChange={(event) => setValue(event.target.value)}
              required
            />
          </label>
          <button type="submit" disabled={action.busy !== null || name.trim() === ''}>
            Set secret
          </button>
        </form>
      )}
      {action.error && <p className="error">{action.error}</p>}
    </>
  );
}
