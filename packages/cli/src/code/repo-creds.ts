/**
 * The credentials `dstack init` stores for a Git remote (dstack's
 * `get_repo_creds_and_default_branch`): a token (`--token`) with the HTTPS URL, an SSH key
 * (`--git-identity`) with the SSH URL, or, given neither, nothing for a public repo and else the
 * local git credential helper's answer for the HTTPS URL (`git credential fill`). Each is checked
 * with `git ls-remote` before it is stored, with only the given credentials (no helper, no
 * prompt), so a wrong one fails here and not in the job.
 */
import { spawn } from 'node:child_process';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import type { RemoteRepoCreds } from '@dstack/core';
import {
  GIT_ENVIRONMENT_CREDENTIAL_ARGS,
  GIT_TOKEN_USERNAME,
  gitSshCommand,
  gitTokenEnvironment,
  redactUrlPasswords,
} from '@dstack/core/agent-protocol';
import { CommandError } from '../output/command-error.js';

export interface RepoCredsOptions {
  /** `--token`: a token for the HTTPS URL. */
  token?: string;
  /** `--git-identity`: the path of a private SSH key for the SSH URL. */
  gitIdentity?: string;
}

/** How long one `git ls-remote` or `git credential fill` may take. */
const GIT_TIMEOUT_MS = 60_000;

interface ParsedRemote {
  /** Lower-case host, without the port. */
  host: string;
  /** The port when the remote names one (kept for a loopback or self-hosted server). */
  port: string | null;
  /** The path on the host, starting with `/`. */
  path: string;
  /** `http` or `https` when the remote is an HTTP(S) URL; null for SSH remotes. */
  httpScheme: 'http' | 'https' | null;
  /** The SSH user of an SSH remote (`git` when it names none). */
  sshUser: string;
}

/** Parses a remote URL: `https://host[:port]/path`, `ssh://[user@]host[:port]/path`, `user@host:path`. */
export function parseRemoteUrl(url: string): ParsedRemote {
  const scp = /^(?:([^/@:]+)@)?([^/:]+):(?!\/\/)(.+)$/.exec(url);
  if (scp && !url.includes('://')) {
    return {
      host: (scp[2] as string).toLowerCase(),
      port: null,
      path: `/${(scp[3] as string).replace(/^\/+/, '')}`,
      httpScheme: null,
      sshUser: scp[1] ?? 'git',
    };
  }
  if (URL.canParse(url)) {
    const parsed = new URL(url);
    const scheme = parsed.protocol.slice(0, -1).toLowerCase();
    if (scheme === 'http' || scheme === 'https' || scheme === 'ssh') {
      return {
        host: parsed.hostname.toLowerCase(),
        port: parsed.port === '' ? null : parsed.port,
        path: decodeURIComponent(parsed.pathname),
        httpScheme: scheme === 'ssh' ? null : scheme,
        sshUser: scheme === 'ssh' && parsed.username !== '' ? decodeURIComponent(parsed.username) : 'git',
      };
    }
  }
  throw new CommandError(
    `the Git remote URL ${redactUrl(url)} is not an HTTP(S) or SSH URL: dstack init needs a remote a job can clone`,
  );
}

/** `https://user:secret@host/x` → `https://user@host/x`, wherever URLs appear in the text. */
export const redactUrl = redactUrlPasswords;

/** The HTTPS URL of the remote (an HTTP remote keeps its scheme and port: it is reached as it is). */
export function httpsUrlOf(remote: ParsedRemote): string {
  if (remote.httpScheme !== null) {
    return `${remote.httpScheme}://${remote.host}${remote.port === null ? '' : `:${remote.port}`}${remote.path}`;
  }
  return `https://${remote.host}${remote.path}`;
}

/** The SSH URL of the remote (`ssh://user@host[:port]/path`; an HTTP remote's port is not SSH's). */
export function sshUrlOf(remote: ParsedRemote): string {
  const port = remote.httpScheme === null && remote.port !== null ? `:${remote.port}` : '';
  return `ssh://${remote.sshUser}@${remote.host}${port}${remote.path}`;
}

function maskToken(token: string): string {
  return token.length > 4 ? `${'*'.repeat(Math.min(token.length - 4, 8))}${token.slice(-4)}` : '***';
}

/** Resolves and checks the creds for the remote; throws a `CommandError` naming the option at fault. */
export async function resolveRepoCreds(
  remoteUrl: string,
  repoRoot: string,
  options: RepoCredsOptions,
): Promise<RemoteRepoCreds> {
  const remote = parseRemoteUrl(remoteUrl);
  if (options.token !== undefined && options.gitIdentity !== undefined) {
    throw new CommandError('--token and --git-identity: give one of them, not both');
  }
  if (options.gitIdentity !== undefined) return sshKeyCreds(remote, options.gitIdentity);
  const httpsUrl = httpsUrlOf(remote);
  if (options.token !== undefined) {
    if (options.token.trim() === '') throw new CommandError('--token: must not be empty');
    return tokenCreds(
      httpsUrl,
      options.token,
      null,
      `--token: cannot access ${httpsUrl} with the token ${maskToken(options.token)}`,
    );
  }
  if ((await lsRemote(httpsUrl, {}, [])).ok) return { clone_url: httpsUrl };
  const filled = await credentialHelperAnswer(httpsUrl, repoRoot);
  if (filled === null) {
    throw new CommandError(
      `no credentials found for ${httpsUrl}: it is not public and the git credential helper has none for it. Pass --token or --git-identity`,
    );
  }
  return tokenCreds(
    httpsUrl,
    filled.password,
    filled.username,
    `the credentials of the git credential helper cannot access ${httpsUrl}; pass --token or --git-identity`,
  );
}

async function tokenCreds(
  httpsUrl: string,
  token: string,
  username: string | null,
  failure: string,
): Promise<RemoteRepoCreds> {
  // A helper's user name travels in the clone URL (no secret in it): the runner sends it with the token.
  const cloneUrl = username === null ? httpsUrl : withUsername(httpsUrl, username);
  const result = await lsRemote(
    cloneUrl,
    gitTokenEnvironment(token, username),
    GIT_ENVIRONMENT_CREDENTIAL_ARGS,
  );
  if (!result.ok) throw new CommandError(`${failure}: ${result.message}`);
  return { clone_url: cloneUrl, oauth_token: token };
}

function withUsername(url: string, username: string): string {
  const parsed = new URL(url);
  parsed.username = username;
  return parsed.toString();
}

async function sshKeyCreds(remote: ParsedRemote, identityPath: string): Promise<RemoteRepoCreds> {
  const path = resolve(identityPath.replace(/^~(?=\/|$)/, process.env.HOME ?? '~'));
  let privateKey: string;
  try {
    privateKey = await readFile(path, 'utf8');
  } catch (error) {
    throw new CommandError(`--git-identity: cannot read the SSH key ${path}: ${(error as Error).message}`);
  }
  if (!/-----BEGIN [A-Z ]*PRIVATE KEY-----/.test(privateKey)) {
    throw new CommandError(`--git-identity: ${path} is not a private SSH key (PEM or OpenSSH format)`);
  }
  const sshUrl = sshUrlOf(remote);
  // The key is checked from a copy: ssh refuses a key file that others can read.
  const directory = await mkdtemp(join(tmpdir(), 'dstack-git-identity-'));
  try {
    const keyFile = join(directory, 'id');
    await writeFile(keyFile, privateKey.endsWith('\n') ? privateKey : `${privateKey}\n`, { mode: 0o600 });
    const result = await lsRemote(sshUrl, { GIT_SSH_COMMAND: gitSshCommand(keyFile) }, []);
    if (!result.ok) {
      throw new CommandError(
        `--git-identity: cannot access ${sshUrl} with the SSH key ${path}: ${result.message}`,
      );
    }
  } finally {
    await rm(directory, { recursive: true, force: true });
  }
  return { clone_url: sshUrl, private_key: privateKey };
}

/** What the git credential helper answers for the URL (run in the repo: its config counts), or null. */
async function credentialHelperAnswer(
  url: string,
  repoRoot: string,
): Promise<{ username: string; password: string } | null> {
  const parsed = new URL(url);
  const query = [
    `protocol=${parsed.protocol.slice(0, -1)}`,
    `host=${parsed.host}`,
    `path=${decodeURIComponent(parsed.pathname).replace(/^\//, '')}`,
    '',
    '',
  ].join('\n');
  const result = await runGit(['credential', 'fill'], {}, repoRoot, query);
  if (!result.ok) return null;
  const fields = new Map(
    result.stdout
      .split('\n')
      .map((line) => line.split('=', 2) as [string, string | undefined])
      .filter((pair): pair is [string, string] => pair[1] !== undefined),
  );
  const password = fields.get('password');
  if (!password) return null;
  return { username: fields.get('username') ?? GIT_TOKEN_USERNAME, password };
}

interface GitResult {
  ok: boolean;
  stdout: string;
  /** git's error output, for a message. */
  message: string;
}

/** `git ls-remote URL HEAD` with only the given credentials: no stored helper, no prompt. */
function lsRemote(
  url: string,
  env: Record<string, string>,
  configArgs: readonly string[],
): Promise<GitResult> {
  return runGit(['-c', 'credential.helper=', ...configArgs, 'ls-remote', '--', url, 'HEAD'], env);
}

function runGit(
  args: string[],
  env: Record<string, string>,
  cwd?: string,
  input?: string,
): Promise<GitResult> {
  return new Promise((resolvePromise) => {
    const child = spawn('git', args, {
      cwd,
      env: {
        ...process.env,
        GIT_TERMINAL_PROMPT: '0',
        GIT_ASKPASS: '',
        SSH_ASKPASS: '',
        GIT_SSH_COMMAND: 'ssh -o BatchMode=yes',
        ...env,
      },
      stdio: ['pipe', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    const timer = setTimeout(() => child.kill('SIGKILL'), GIT_TIMEOUT_MS);
    child.stdout.setEncoding('utf8').on('data', (chunk: string) => {
      stdout += chunk;
    });
    child.stderr.setEncoding('utf8').on('data', (chunk: string) => {
      if (stderr.length < 4096) stderr += chunk;
    });
    child.stdin.on('error', () => {});
    child.stdin.end(input ?? '');
    child.once('error', (error) => {
      clearTimeout(timer);
      resolvePromise({ ok: false, stdout: '', message: `git could not start: ${error.message}` });
    });
    child.once('close', (code, signal) => {
      clearTimeout(timer);
      const how = signal === null ? `exit status ${code}` : `signal ${signal}`;
      resolvePromise({
        ok: code === 0,
        stdout,
        message: redactUrl(stderr.trim()) || `git failed (${how})`,
      });
    });
  });
}
