/**
 * What cloud-init would make of an instance's user data, as files for the emulated host's boot
 * script (emulator-host-image/emulated-host-boot.sh): the exact user data in `user-data.txt`,
 * `early.sh` for what cloud-init does before sshd is up (`write_files`, `ssh_authorized_keys`)
 * and `scripts/*` for what it runs late in boot (a user-data shell script as is; `runcmd`).
 * Only the formats and keys dstack's backends send are understood; anything else is refused
 * with an error naming the field, so a backend's mistake shows at launch, not as a host that
 * never comes up.
 */
import { gunzipSync } from 'node:zlib';
import { parse as parseYaml } from 'yaml';

/**
 * The image's default user (Ubuntu's `ubuntu`), who gets the cloud-config `ssh_authorized_keys`
 * as cloud-init gives them to the distro's default user; root gets none.
 */
export const EMULATED_HOST_DEFAULT_USER = 'ubuntu';

/** Where the boot script looks for the instance's files (cloud-init's own directory). */
export const INSTANCE_DIRECTORY = '/var/lib/cloud/instance';

export class HostUserDataError extends Error {
  override readonly name = 'HostUserDataError';
  /** The offending part of the user data: `user_data`, or a cloud-config key path like `write_files[0].path`. */
  readonly field: string;
  constructor(field: string, message: string) {
    super(`user data ${field}: ${message}`);
    this.field = field;
  }
}

export interface InstanceBootFile {
  /** Absolute path inside the host. */
  readonly path: string;
  readonly content: Buffer;
  readonly mode: number;
}

const CLOUD_CONFIG_HEADER = '#cloud-config';
/** The cloud-config keys handled here; any other key is logged on the host as ignored, as cloud-init does for a module it lacks. */
const HANDLED_KEYS = new Set(['write_files', 'ssh_authorized_keys', 'runcmd']);
const HEREDOC_END = 'DSTACK_EMULATED_HOST_EOF';

/** Quotes a value for a POSIX shell. */
function shellQuote(value: string): string {
  return `'${value.replaceAll("'", `'\\''`)}'`;
}

function script(lines: readonly string[]): Buffer {
  return Buffer.from(`#!/bin/sh\n${lines.join('\n')}\n`, 'utf8');
}

/** Shell lines that write `bytes` to `path` through base64, so any content survives the script. */
function writeBytesLines(path: string, bytes: Buffer, append: boolean): string[] {
  const encoded = bytes.toString('base64').replace(/.{1,76}/g, '$&\n');
  return [
    `mkdir -p "$(dirname ${shellQuote(path)})"`,
    `base64 -d ${append ? '>>' : '>'} ${shellQuote(path)} <<'${HEREDOC_END}'`,
    `${encoded}${HEREDOC_END}`,
  ];
}

function expectList(value: unknown, field: string): unknown[] {
  if (!Array.isArray(value)) throw new HostUserDataError(field, 'must be a list');
  return value;
}

function expectString(value: unknown, field: string): string {
  if (typeof value !== 'string') throw new HostUserDataError(field, 'must be a string');
  return value;
}

function decodeContent(content: string, encoding: string, field: string): Buffer {
  switch (encoding.toLowerCase()) {
    case 'text':
      return Buffer.from(content, 'utf8');
    case 'b64':
    case 'base64':
      return Buffer.from(content, 'base64');
    case 'gz':
    case 'gzip':
      return gunzipSync(Buffer.from(content, 'latin1'));
    case 'gz+b64':
    case 'gz+base64':
    case 'gzip+b64':
    case 'gzip+base64':
      return gunzipSync(Buffer.from(content, 'base64'));
    default:
      throw new HostUserDataError(field, `unknown encoding ${JSON.stringify(encoding)}`);
  }
}

/** cloud-init takes permissions as an octal string (`'0644'`) or, from YAML 1.1, an integer. */
function parsePermissions(value: unknown, field: string): number {
  if (value === undefined) return 0o644;
  if (typeof value === 'number' && Number.isInteger(value) && value >= 0 && value <= 0o7777) return value;
  if (typeof value === 'string' && /^(0o?)?[0-7]{1,4}$/.test(value.trim())) {
    return Number.parseInt(value.trim().replace(/^0o/, ''), 8);
  }
  throw new HostUserDataError(field, `must be an octal mode like '0644', not ${JSON.stringify(value)}`);
}

function writeFileLines(entry: unknown, index: number): { lines: string[]; deferred: boolean } {
  const field = `write_files[${index}]`;
  if (typeof entry !== 'object' || entry === null || Array.isArray(entry)) {
    throw new HostUserDataError(field, 'must be a mapping with a path');
  }
  const file = entry as Record<string, unknown>;
  const path = expectString(file.path, `${field}.path`);
  if (!path.startsWith('/')) throw new HostUserDataError(`${field}.path`, `must be absolute, not ${path}`);
  const content = file.content === undefined ? '' : expectString(file.content, `${field}.content`);
  const encoding = file.encoding === undefined ? 'text' : expectString(file.encoding, `${field}.encoding`);
  const mode = parsePermissions(file.permissions, `${field}.permissions`);
  const owner = file.owner === undefined ? 'root:root' : expectString(file.owner, `${field}.owner`);
  const append = file.append === true;
  const lines = [
    ...writeBytesLines(path, decodeContent(content, encoding, `${field}.encoding`), append),
    `chmod ${mode.toString(8)} ${shellQuote(path)}`,
    `chown ${shellQuote(owner)} ${shellQuote(path)}`,
  ];
  return { lines, deferred: file.defer === true };
}

function runcmdLine(entry: unknown, index: number): string {
  const field = `runcmd[${index}]`;
  if (typeof entry === 'string') return entry;
  // A list is one command's argv, quoted (cloud-init's shellify).
  if (Array.isArray(entry)) {
    return entry
      .map((word, wordIndex) => {
        if (typeof word !== 'string' && typeof word !== 'number') {
          throw new HostUserDataError(`${field}[${wordIndex}]`, 'must be a string');
        }
        return shellQuote(String(word));
      })
      .join(' ');
  }
  throw new HostUserDataError(field, 'must be a string or a list of strings');
}

function cloudConfigFiles(userData: string): InstanceBootFile[] {
  let config: unknown;
  try {
    // cloud-init reads YAML 1.1 (PyYAML): `permissions: 0644` is octal there.
    config = parseYaml(userData, { version: '1.1' });
  } catch (error) {
    throw new HostUserDataError('user_data', `#cloud-config is not valid YAML: ${(error as Error).message}`);
  }
  if (config === null || config === undefined) return [];
  if (typeof config !== 'object' || Array.isArray(config)) {
    throw new HostUserDataError('user_data', '#cloud-config must be a mapping');
  }
  const keys = config as Record<string, unknown>;
  const early: string[] = [];
  const deferredWrites: string[] = [];
  for (const key of Object.keys(keys)) {
    if (!HANDLED_KEYS.has(key)) {
      early.push(`echo ${shellQuote(`emulated-host: ignoring cloud-config key ${key}`)}`);
    }
  }
  if (keys.write_files !== undefined) {
    expectList(keys.write_files, 'write_files').forEach((entry, index) => {
      const { lines, deferred } = writeFileLines(entry, index);
      (deferred ? deferredWrites : early).push(...lines);
    });
  }
  if (keys.ssh_authorized_keys !== undefined) {
    const authorized = expectList(keys.ssh_authorized_keys, 'ssh_authorized_keys').map((key, index) =>
      expectString(key, `ssh_authorized_keys[${index}]`).trim(),
    );
    const user = EMULATED_HOST_DEFAULT_USER;
    const directory = `/home/${user}/.ssh`;
    const file = `${directory}/authorized_keys`;
    early.push(
      `mkdir -p ${shellQuote(directory)} && chmod 700 ${shellQuote(directory)}`,
      ...writeBytesLines(file, Buffer.from(`${authorized.join('\n')}\n`), true),
      `chmod 600 ${shellQuote(file)}`,
      `chown -R ${user}:${user} ${shellQuote(directory)}`,
    );
  }
  const files: InstanceBootFile[] = [];
  if (early.length > 0) {
    files.push({ path: `${INSTANCE_DIRECTORY}/early.sh`, content: script(early), mode: 0o700 });
  }
  // Deferred writes come before runcmd: cloud-init's final stage runs write_files_deferred first.
  if (deferredWrites.length > 0) {
    files.push({
      path: `${INSTANCE_DIRECTORY}/scripts/00-write-files-deferred`,
      content: script(deferredWrites),
      mode: 0o700,
    });
  }
  if (keys.runcmd !== undefined) {
    const lines = expectList(keys.runcmd, 'runcmd').map(runcmdLine);
    files.push({ path: `${INSTANCE_DIRECTORY}/scripts/runcmd`, content: script(lines), mode: 0o700 });
  }
  return files;
}

/** The files to place in the host before it boots, for the user data as the backend sent it. */
export function instanceBootFiles(userData: string): InstanceBootFile[] {
  const exact: InstanceBootFile = {
    path: `${INSTANCE_DIRECTORY}/user-data.txt`,
    content: Buffer.from(userData, 'utf8'),
    mode: 0o600,
  };
  if (userData.trim() === '') return [exact];
  if (userData.startsWith('#!')) {
    // cloud-init runs a user-data script as it is, by its own interpreter line.
    return [exact, { path: `${INSTANCE_DIRECTORY}/scripts/part-001`, content: exact.content, mode: 0o700 }];
  }
  if (userData.startsWith(CLOUD_CONFIG_HEADER) && /^#cloud-config\s/.test(`${userData}\n`)) {
    return [exact, ...cloudConfigFiles(userData)];
  }
  const start = JSON.stringify(userData.slice(0, 20));
  throw new HostUserDataError(
    'user_data',
    `must be a shell script (starting with #!) or #cloud-config; it starts with ${start}`,
  );
}
