/**
 * The server directory holds secrets: config.yml has the encryption keys, the SQLite database
 * the creds and SSH keys. What the server creates there is for the server's user only, and a
 * file of its own found open to others (written by an older version) is closed at start.
 */
import { chmodSync, closeSync, mkdirSync, openSync, statSync } from 'node:fs';

export const OWNER_ONLY_DIRECTORY_MODE = 0o700;
export const OWNER_ONLY_FILE_MODE = 0o600;

/** Creates `directory` and its missing parents with mode 0700; an existing directory is left as it is. */
export function makeOwnerOnlyDirectory(directory: string): void {
  mkdirSync(directory, { recursive: true, mode: OWNER_ONLY_DIRECTORY_MODE });
}

/** Takes the group's and others' permissions away from `path`, when it exists. */
export function restrictToOwner(path: string): void {
  let mode: number;
  try {
    mode = statSync(path).mode;
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return;
    throw error;
  }
  if ((mode & 0o077) !== 0) chmodSync(path, mode & 0o700);
}

/** Creates `path` empty with mode 0600 unless it exists, and restricts it to the owner either way. */
export function ensureOwnerOnlyFile(path: string): void {
  closeSync(openSync(path, 'a', OWNER_ONLY_FILE_MODE));
  restrictToOwner(path);
}
