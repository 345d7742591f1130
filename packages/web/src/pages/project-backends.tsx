import { type FormEvent, useState } from 'react';
import { projectPath } from '../api';
import { RowAction, Table } from '../components';
import { useSession } from '../session';
import { useAction } from '../use-action';
import { useData } from '../use-data';
import type { ProjectRights } from './project-rights';

/** What `backends/list` answers: the config without its creds (the server never sends them back). */
export interface BackendInfo {
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

const SETTINGS_EXAMPLE = '{"creds": {"type": "api_key", "api_key": "…"}, "regions": ["us-east-1"]}';

/** The settings typed as JSON: the fields of a backend in the server's config.yml, creds included. */
function parseSettings(text: string): Record<string, unknown> {
  if (text.trim() === '') return {};
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch (error) {
    throw new Error(`Settings: not JSON (${error instanceof Error ? error.message : String(error)})`);
  }
  if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed)) {
    throw new Error('Settings: expected a JSON object, e.g. {"regions": ["us-east-1"]}');
  }
  if ('type' in parsed) throw new Error('Settings: the type is chosen above, not in the settings');
  return parsed as Record<string, unknown>;
}

/**
 * Backends: `backends/create` takes the type and its settings with creds, validated by the
 * backend; the creds are cleared from the form once sent and never come back from the server.
 */
export function ProjectBackends({
  project,
  backends,
  rights,
  onChange,
}: {
  project: string;
  backends: readonly BackendInfo[];
  rights: ProjectRights;
  onChange(): void;
}) {
  const { api } = useSession();
  const action = useAction();
  const types = useData(
    () => (rights.administer ? api.post<string[]>('/api/backends/list_types') : Promise.resolve([])),
    [api, rights.administer],
  );
  const [type, setType] = useState('');
  const [settings, setSettings] = useState('');
  const chosenType = type || types.data?.[0] || '';

  const add = async (event: FormEvent) => {
    event.preventDefault();
    const added = await action.run('add', async () =>
      api.post(projectPath(project, 'backends/create'), { type: chosenType, ...parseSettings(settings) }),
    );
    if (!added) return;
    setSettings('');
    onChange();
  };

  return (
    <>
      <h2>Backends</h2>
      <Table
        head={rights.administer ? ['Backend', 'Settings', 'State', ''] : ['Backend', 'Settings', 'State']}
        empty="No backends."
      >
        {backends.map((backend) => (
          <tr key={backend.name} data-backend={backend.name}>
            <td>{backend.name}</td>
            <td>{describeBackend(backend.config)}</td>
            <td className={backend.error ? 'error' : undefined}>{backend.error ?? 'ok'}</td>
            {rights.administer && (
              <td>
                <RowAction
                  action={action}
                  label="Remove"
                  confirmation={`Remove backend ${backend.name} from ${project}?`}
                  work={() =>
                    api.post(projectPath(project, 'backends/delete'), { backends_names: [backend.name] })
                  }
                  onDone={onChange}
                />
              </td>
            )}
          </tr>
        ))}
      </Table>
      {rights.administer && (
        <form className="stacked-form" onSubmit={add} aria-label="Add backend">
          <label>
            Backend type
            <select name="backend_type" value={chosenType} onChange={(event) => setType(event.target.value)}>
              {(types.data ?? []).map((name) => (
                <option key={name} value={name}>
                  {name}
                </option>
              ))}
            </select>
          </label>
          <label>
            Settings and creds (JSON, as the backend's entry in the server's config.yml)
            <textarea
              name="backend_settings"
              rows={3}
              spellCheck={false}
              autoComplete="off"
              placeholder={SETTINGS_EXAMPLE}
              value={settings}
              onChange={(event) => setSettings(event.target.value)}
            />
          </label>
          <button type="submit" disabled={action.busy !== null || chosenType === ''}>
            {action.busy === 'add' ? 'Checking…' : 'Add backend'}
          </button>
        </form>
      )}
      {types.error && <p className="error">{types.error}</p>}
      {action.error && <p className="error">{action.error}</p>}
    </>
  );
}
