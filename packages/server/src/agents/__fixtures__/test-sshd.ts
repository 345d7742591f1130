import { type ChildProcess, spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdir, mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { findFreePort } from '@dstack/shim';
import { generateProjectSshKeyPair } from '../ssh-keys.js';

export const SSHD_PATH = '/usr/sbin/sshd';

/** Why the sshd tests cannot run here, or null when they can. */
export function sshdUnavailableReason(): string | null {
  if (!existsSync(SSHD_PATH)) return `${SSHD_PATH} is not installed`;
  if (process.getuid?.() !== 0) return 'the sshd tests log in as root and must run as root';
  return null;
}

/** A real OpenSSH server on 127.0.0.1 that lets root in with one generated key. */
export interface TestSshd {
  port: number;
  pid: number;
  /** The key authorized for root. */
  privateKey: string;
  /** Everything sshd logged so far (`-e`: to stderr). */
  log(): string;
  /** How many logins sshd accepted so far. */
  acceptedLogins(): number;
  /** Pids of sshd's per-connection children: one or more per open SSH connection. */
  sessionPids(): Promise<number[]>;
  stop(): Promise<void>;
}

export interface TestSshdOptions {
  /** Offer the SFTP subsystem (OpenSSH's internal-sftp). Default false. */
  sftp?: boolean;
}

export async function startTestSshd(options: TestSshdOptions = {}): Promise<TestSshd> {
  const directory = await mkdtemp(join(tmpdir(), 'dstack-sshd-'));
  const hostKey = generateProjectSshKeyPair();
  const clientKey = generateProjectSshKeyPair();
  await writeFile(join(directory, 'host_key'), hostKey.privateKey, { mode: 0o600 });
  await writeFile(join(directory, 'authorized_keys'), `${clientKey.publicKey}\n`, { mode: 0o600 });
  // sshd refuses to start without its privilege separation directory.
  await mkdir('/run/sshd', { recursive: true });
  const port = await findFreePort();
  const config = [
    `Port ${port}`,
    'ListenAddress 127.0.0.1',
    `HostKey ${join(directory, 'host_key')}`,
    `AuthorizedKeysFile ${join(directory, 'authorized_keys')}`,
    'PermitRootLogin prohibit-password',
    'PasswordAuthentication no',
    'KbdInteractiveAuthentication no',
    'AllowTcpForwarding yes',
    'StrictModes no',
    'UsePAM no',
    `PidFile ${join(directory, 'sshd.pid')}`,
    'LogLevel VERBOSE',
    ...(options.sftp ? ['Subsystem sftp internal-sftp'] : []),
  ].join('\n');
  await writeFile(join(directory, 'sshd_config'), `${config}\n`);

  const child = spawn(SSHD_PATH, ['-D', '-e', '-f', join(directory, 'sshd_config')], {
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  let log = '';
  child.stderr?.setEncoding('utf8').on('data', (chunk: string) => {
    log += chunk;
  });
  const stop = async () => {
    const sessions = child.pid === undefined ? [] : await childPidsOf(child.pid);
    await stopProcess(child);
    // Sessions outlive the listener; end the ones a failed test left open.
    for (const session of sessions) killQuietly(session);
    await rm(directory, { recursive: true, force: true });
  };
  try {
    await waitFor(
      () => log.includes('Server listening on'),
      () => child.exitCode !== null,
      10_000,
    );
  } catch (error) {
    await stop();
    throw new Error(`sshd did not start: ${(error as Error).message}\n${log}`);
  }
  const pid = child.pid ?? 0;
  return {
    port,
    pid,
    privateKey: clientKey.privateKey,
    log: () => log,
    acceptedLogins: () => log.match(/Accepted publickey for root/g)?.length ?? 0,
    sessionPids: () => childPidsOf(pid),
    stop,
  };
}

async function childPidsOf(parent: number): Promise<number[]> {
  const children: number[] = [];
  for (const entry of await readdir('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const stat = await readFile(`/proc/${entry}/stat`, 'utf8');
      // Field 4 (after the parenthesised command) is the parent pid.
      const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
      if (Number(fields[1]) === parent) children.push(Number(entry));
    } catch {
      // The process exited while we looked.
    }
  }
  return children;
}

async function waitFor(done: () => boolean, failed: () => boolean, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!done()) {
    if (failed()) throw new Error('the process exited');
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms`);
    await new Promise((resolve) => setTimeout(resolve, 25));
  }
}

async function stopProcess(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  child.kill('SIGTERM');
  const timer = setTimeout(() => child.kill('SIGKILL'), 5_000);
  await exited;
  clearTimeout(timer);
}

function killQuietly(pid: number): void {
  try {
    process.kill(pid, 'SIGKILL');
  } catch {
    // Already gone.
  }
}
