/**
 * The answers about a project's named resources (fleets, volumes, gateways, runs) that each of
 * them gives alike, in dstack's shapes: a name with no live row is a 400 `resource_not_exists`
 * naming it, and a name a live row holds is a 400 `resource_exists` on the configuration's name.
 */
import { ResourceNotFoundError, ServerClientError } from '@dstack/core';

export type ResourceKind = 'Fleet' | 'Volume' | 'Gateway' | 'Run';

/** `row`, or the not-found error naming `name` ("Gateway main not found"). */
export function requireFound<Row>(kind: ResourceKind, name: string, row: Row | null | undefined): Row {
  if (row == null) throw new ResourceNotFoundError(`${kind} ${name} not found`);
  return row;
}

/** `rows`, when every one of `names` has one; else the not-found error naming each that has none. */
export function requireEachFound<Row>(
  kind: ResourceKind,
  names: readonly string[],
  rows: Row[],
  nameOf: (row: Row) => string,
): Row[] {
  const missing = names.filter((name) => !rows.some((row) => nameOf(row) === name));
  if (missing.length > 0) throw new ResourceNotFoundError(`${kind} ${missing.join(', ')} not found`);
  return rows;
}

/** The error for a create whose name a live resource of the project already holds. */
export function nameTakenError(kind: ResourceKind, name: string): ServerClientError {
  return new ServerClientError(`${kind} ${name} already exists`, {
    code: 'resource_exists',
    fields: [['configuration', 'name']],
  });
}
