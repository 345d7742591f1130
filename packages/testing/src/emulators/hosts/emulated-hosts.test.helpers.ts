/**
 * For the emulated hosts' tests: a Docker daemon (started by scripts/services/ensure-dockerd.sh
 * when none answers, as the shim's Docker tests do) and SSH into a host the way the server does,
 * with ssh2 and a key the user data authorized.
 */
import { execFile } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { Client } from 'ssh2';

const run = promisify(execFile);

const REPOSITORY_ROOT = fileURLToPath(new URL('../../../../../', import.meta.url));
const ENSURE_DOCKERD = `${REPOSITORY_ROOT}scripts/services/ensure-dockerd.sh`;

export type DockerForHostTests = { available: true } | { available: false; reason: string };

async function daemonAnswers(): Promise<boolean> {
  try {
    await run('docker', ['info', '--format', '{{.ID}}'], { timeout: 30_000 });
    return true;
  } catch {
    return false;
  }
}

/** Makes sure a Docker daemon answers; reports why not instead of throwing, so the tests skip with the reason. */
export async function prepareDockerForHostTests(): Promise<DockerForHostTests> {
  if (await daemonAnswers()) return { available: true };
  try {
    await run('bash', [ENSURE_DOCKERD, '--no-image'], { timeout: 300_000 });
  } catch (error) {
    const stderr = (error as { stderr?: string }).stderr?.trim();
    return { available: false, reason: `Docker is missing: ${stderr || (error as Error).message}` };
  }
  return (await daemonAnswers())
    ? { available: true }
    : { available: false, reason: 'no Docker daemon answers' };
}

export interface SshResult {
  stdout: string;
  stderr: string;
  code: number | null;
}

function connectOnce(address: string, privateKey: string, username: string): Promise<Client> {
  return new Promise((resolve, reject) => {
    const client = new Client();
    client
      .once('ready', () => resolve(client))
      .once('error', (error) => {
        client.end();
        reject(error);
      })
      .connect({ host: address, port: 22, username, privateKey, readyTimeout: 10_000 });
  });
}

/**
 * Logs in as root with the key. The user data that authorizes the key runs beside sshd (as
 * cloud-init's final stage does), so a refused key is retried for a bounded number of attempts.
 */
export function connectAsRoot(address: string, privateKey: string): Promise<Client> {
  return connectAs(address, privateKey, 'root');
}

/** Logs in as `username` (e.g. the image's default user `ubuntu`, which cloud-config keys go to), retrying as `connectAsRoot`. */
export async function connectAs(address: string, privateKey: string, username: string): Promise<Client> {
  let lastError: unknown;
  for (let attempt = 0; attempt < 100; attempt++) {
    try {
      return await connectOnce(address, privateKey, username);
    } catch (error) {
      lastError = error;
      if ((error as { level?: string }).level !== 'client-authentication') throw error;
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
  }
  throw lastError;
}

export function execOverSsh(client: Client, command: string): Promise<SshResult> {
  return new Promise((resolve, reject) => {
    client.exec(command, (error, stream) => {
      if (error) {
        reject(error);
        return;
      }
      let stdout = '';
      let stderr = '';
      stream.on('data', (chunk: Buffer) => {
        stdout += chunk.toString('utf8');
      });
      stream.stderr.on('data', (chunk: Buffer) => {
        stderr += chunk.toString('utf8');
      });
      stream.once('close', (code: number | null) => resolve({ stdout, stderr, code }));
    });
  });
}

/** Runs one command over a fresh login and ends it. */
export function sshAsRoot(address: string, privateKey: string, command: string): Promise<SshResult> {
  return sshAs(address, privateKey, 'root', command);
}

/** Runs `command` over SSH as `username`. */
export async function sshAs(
  address: string,
  privateKey: string,
  username: string,
  command: string,
): Promise<SshResult> {
  const client = await connectAs(address, privateKey, username);
  try {
    return await execOverSsh(client, command);
  } finally {
    client.end();
  }
}

export function docker(args: string[]): Promise<string> {
  return run('docker', args, { timeout: 60_000 }).then(({ stdout }) => stdout);
}
