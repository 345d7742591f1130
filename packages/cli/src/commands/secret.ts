/**
 * `dstack secret list|get|set|delete`: the project's secrets, as dstack's CLI shows them (a
 * `NAME VALUE` table; values only from `get`, `******` in the list). Reference a secret in a
 * configuration's `env` or `registry_auth` as `${{ secrets.NAME }}`.
 */
import type { Secret } from '@dstack/core';
import type { CliIo } from '../io.js';
import { createColors } from '../output/colors.js';
import { formatTable } from '../output/table.js';
import { confirmAction } from './confirm.js';
import { connect, type ProjectOption } from './connect.js';

/** What the list shows for a value it does not get (dstack's six stars). */
const HIDDEN_VALUE = '******';

export interface SecretDeleteOptions extends ProjectOption {
  yes?: boolean;
}

function formatSecrets(secrets: readonly Secret[], io: CliIo): string {
  return formatTable(
    ['NAME', 'VALUE'],
    secrets.map((secret) => [secret.name, secret.value ?? HIDDEN_VALUE]),
    { styleHeader: createColors(Boolean(io.stdoutColors)).bold },
  );
}

/** `dstack secret list` (also plain `dstack secret`): names only. */
export async function secretListCommand(options: ProjectOption, io: CliIo): Promise<number> {
  const client = await connect(options, io);
  io.stdout(formatSecrets(await client.listSecrets(), io));
  return 0;
}

/** `dstack secret get NAME`: the name and value (project admins). */
export async function secretGetCommand(name: string, options: ProjectOption, io: CliIo): Promise<number> {
  const client = await connect(options, io);
  io.stdout(formatSecrets([await client.getSecret(name)], io));
  return 0;
}

/** `dstack secret set NAME VALUE`: creates the secret or replaces its value. */
export async function secretSetCommand(
  name: string,
  value: string,
  options: ProjectOption,
  io: CliIo,
): Promise<number> {
  const client = await connect(options, io);
  await client.createOrUpdateSecret({ name, value });
  io.stdout('OK\n');
  return 0;
}

/** `dstack secret delete NAME`, after asking unless `-y`. */
export async function secretDeleteCommand(
  name: string,
  options: SecretDeleteOptions,
  io: CliIo,
): Promise<number> {
  const client = await connect(options, io);
  if (!(await confirmAction(io, `Delete the secret ${name}?`, options.yes))) return 0;
  await client.deleteSecrets({ secrets_names: [name] });
  io.stdout('OK\n');
  return 0;
}
