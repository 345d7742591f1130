/**
 * A job's user as dstack's job spec carries it (`UnixUser`): the configuration's `user`
 * (`name_or_uid[:group_or_gid]`, Docker's format) parsed into its parts.
 */
import * as z from 'zod';

export const UnixUserSchema = z.object({
  uid: z.number().int().nonnegative().nullish(),
  gid: z.number().int().nonnegative().nullish(),
  username: z.string().min(1).nullish(),
  groupname: z.string().min(1).nullish(),
});
export type UnixUser = z.output<typeof UnixUserSchema>;

function nameOrId(part: string, what: string): { id: number | null; name: string | null } {
  if (part === '') throw new Error(`invalid user format: empty ${what} name or id`);
  return /^\d+$/.test(part) ? { id: Number(part), name: null } : { id: null, name: part };
}

/** `user[:group]` (names or numeric ids) as a `UnixUser`; throws on an empty part or a third one. */
export function parseUnixUser(value: string): UnixUser {
  const parts = value.split(':');
  if (parts.length > 2) throw new Error('invalid user format: too many parts');
  const user = nameOrId(parts[0]!, 'user');
  const group = parts.length === 2 ? nameOrId(parts[1]!, 'group') : { id: null, name: null };
  return { uid: user.id, gid: group.id, username: user.name, groupname: group.name };
}

/** Whether `value` is a `user[:group]` that `parseUnixUser` takes. */
export function isValidUnixUser(value: string): boolean {
  try {
    parseUnixUser(value);
    return true;
  } catch {
    return false;
  }
}

/** The `UnixUser` back in `user[:group]` form (names before ids), as Docker and the shim take it. */
export function formatUnixUser(user: UnixUser): string {
  const name = user.username ?? (user.uid == null ? '' : String(user.uid));
  const group = user.groupname ?? (user.gid == null ? null : String(user.gid));
  return group === null ? name : `${name}:${group}`;
}

/**
 * A job spec's `user`: dstack's object, or (as job specs stored by earlier versions hold it)
 * the configuration's string, read as the object.
 */
export const JobSpecUserSchema = z.preprocess(
  (value) => (typeof value === 'string' ? parseUnixUser(value) : value),
  UnixUserSchema,
);
