/**
 * OpenSSH configuration for `ssh RUN`: a `Host RUN` block per attached run in
 * `~/.dstack/ssh/config`, whose ProxyCommand is this CLI's `ssh-proxy`, and an `Include` of
 * that file at the top of `~/.ssh/config`, as dstack's CLI writes them.
 */
import { chmod, mkdir, readFile, rename, writeFile } from 'node:fs/promises';
import { dirname, join } from 'node:path';

export interface RunHostOptions {
  /** The run name: the `Host` alias. */
  runName: string;
  projectName: string;
  /** The private key's absolute path. */
  identityFile: string;
  /** The command OpenSSH runs to reach the job: `[node, dstack bin, ...]` before `ssh-proxy`. */
  dstackCommand: readonly string[];
}

/** Words sh takes literally; anything else is single-quoted. */
const SHELL_SAFE = /^[A-Za-z0-9_@%+=:,./-]+$/;

/** A word for the shell that runs a ProxyCommand. */
function shellQuote(word: string): string {
  return SHELL_SAFE.test(word) ? word : `'${word.replaceAll("'", `'\\''`)}'`;
}

/** OpenSSH expands `%` tokens in ProxyCommand and IdentityFile: `%%` is a literal `%`. */
function escapePercent(text: string): string {
  return text.replaceAll('%', '%%');
}

/** An ssh_config argument, double-quoted when it has spaces (OpenSSH's own quoting). */
function configArgument(text: string): string {
  return /\s/.test(text) ? `"${text}"` : text;
}

/** The `Host RUN` block (no trailing blank line). */
export function formatRunHostBlock(options: RunHostOptions): string {
  const proxyCommand = [
    ...options.dstackCommand,
    'ssh-proxy',
    '--project',
    options.projectName,
    options.runName,
  ]
    .map((word) => escapePercent(shellQuote(word)))
    .join(' ');
  return [
    `Host ${options.runName}`,
    // Any user is accepted; jobs run as the job's user whatever this says. dstack writes root.
    '  User root',
    `  IdentityFile ${configArgument(escapePercent(options.identityFile))}`,
    '  IdentitiesOnly yes',
    // The runner's host key is new on every start: nothing to remember or check it against.
    '  StrictHostKeyChecking no',
    '  UserKnownHostsFile /dev/null',
    // Hides "Permanently added … to the list of known hosts" on every connection.
    '  LogLevel ERROR',
    `  ProxyCommand ${proxyCommand}`,
  ].join('\n');
}

/** `Host a b` → `['a', 'b']`; undefined for lines that do not start a block. */
function blockPatterns(line: string): string[] | undefined {
  const match = /^\s*(host|match)\b\s*=?\s*(.*)$/i.exec(line);
  if (!match) return undefined;
  return match[1]!.toLowerCase() === 'host' ? match[2]!.trim().split(/\s+/) : [];
}

/**
 * `text` (an ssh_config) with the block of `Host runName` replaced by `block`, or `block`
 * appended when there is none. Other blocks are kept as they are.
 */
export function upsertHostBlock(text: string, runName: string, block: string): string {
  const lines = text === '' ? [] : text.replace(/\n+$/, '').split('\n');
  const kept: string[] = [];
  let replacedAt: number | undefined;
  let inReplacedBlock = false;
  for (const line of lines) {
    const patterns = blockPatterns(line);
    if (patterns !== undefined) {
      inReplacedBlock = patterns.length === 1 && patterns[0] === runName;
      if (inReplacedBlock) replacedAt ??= kept.length;
    }
    if (!inReplacedBlock) kept.push(line);
  }
  const blockLines = [...block.split('\n'), ''];
  if (replacedAt === undefined) {
    if (kept.length > 0 && kept.at(-1) !== '') kept.push('');
    kept.push(...blockLines);
  } else {
    kept.splice(replacedAt, 0, ...blockLines);
  }
  while (kept.at(-1) === '') kept.pop();
  return `${kept.join('\n')}\n`;
}

/**
 * `text` (the user's `~/.ssh/config`) with `Include includePath` as its first line, or
 * undefined when it already includes it. It goes first because an `Include` after a `Host`
 * line would apply only to that host.
 */
export function withInclude(text: string, includePath: string): string | undefined {
  const included = text.split('\n').some((line) => {
    const match = /^\s*include\s*=?\s*(.*)$/i.exec(line);
    const paths = match?.[1]?.match(/"[^"]*"|\S+/g) ?? [];
    return paths.some((path) => path.replace(/^"(.*)"$/, '$1') === includePath);
  });
  if (included) return undefined;
  return `Include ${configArgument(includePath)}\n\n${text}`;
}

/** Writes through a temporary file, so a reader never sees half a file; mode 0600. */
async function writePrivateFile(path: string, text: string): Promise<void> {
  await mkdir(dirname(path), { recursive: true, mode: 0o700 });
  const temporary = `${path}.${process.pid}.tmp`;
  await writeFile(temporary, text, { mode: 0o600 });
  await chmod(temporary, 0o600);
  await rename(temporary, path);
}

async function readOrEmpty(path: string): Promise<string> {
  try {
    return await readFile(path, 'utf8');
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return '';
    throw error;
  }
}

export interface InstallRunHostOptions extends RunHostOptions {
  /** The user's home: `~/.ssh/config` and `~/.dstack/ssh/config` are under it. */
  home: string;
}

/**
 * Makes `ssh RUN` work: writes the run's block into `~/.dstack/ssh/config` and includes that
 * file from `~/.ssh/config` (created if missing). Returns the path of dstack's file.
 */
export async function installRunHost(options: InstallRunHostOptions): Promise<string> {
  const dstackConfigPath = join(options.home, '.dstack', 'ssh', 'config');
  const dstackConfig = await readOrEmpty(dstackConfigPath);
  await writePrivateFile(
    dstackConfigPath,
    upsertHostBlock(dstackConfig, options.runName, formatRunHostBlock(options)),
  );
  const userConfigPath = join(options.home, '.ssh', 'config');
  const userConfig = await readOrEmpty(userConfigPath);
  const updated = withInclude(userConfig, dstackConfigPath);
  if (updated !== undefined) {
    // In place: the user's file may be a symlink (dotfiles), and keeps its mode (0600 when new).
    await mkdir(dirname(userConfigPath), { recursive: true, mode: 0o700 });
    await writeFile(userConfigPath, updated, { mode: 0o600 });
  }
  return dstackConfigPath;
}
