/**
 * Starts the shim on a Lambda instance the way dstack does there (Lambda has no user data): log in
 * as the image's `ubuntu` with the project key once the instance is active, and run core's
 * bootstrap script as root (`sudo sh -s`, the script on stdin so the token is on no command line).
 * The script starts the shim in the background and returns; running it again changes nothing.
 */
import { buildVmBootstrapScript } from '@dstack/core';
import { Client, type ClientChannel } from 'ssh2';
import type { LambdaBootstrap } from './lambda-bootstrap-secret.js';

/** Lambda's images log in as `ubuntu` (dstack's `username="ubuntu"`). */
export const LAMBDA_SSH_USER = 'ubuntu';
export const LAMBDA_SSH_PORT = 22;
/** How long a login may take before this poll gives up (the next poll tries again). */
const SSH_READY_TIMEOUT_MS = 15_000;
/** How long the script may run: it writes files and forks the shim's loop. */
const SCRIPT_TIMEOUT_MS = 60_000;

/** The host did not let us in yet (sshd still starting, the key not installed yet): try again later. */
export class LambdaLoginPendingError extends Error {
  override readonly name = 'LambdaLoginPendingError';
}

/** The script ran and failed: the instance will not get a shim. */
export class LambdaBootstrapScriptError extends Error {
  override readonly name = 'LambdaBootstrapScriptError';
}

export async function runLambdaBootstrap(options: {
  host: string;
  port?: number;
  privateKey: string;
  bootstrap: LambdaBootstrap;
}): Promise<void> {
  const script = buildVmBootstrapScript(options.bootstrap);
  const client = new Client();
  try {
    await new Promise<void>((resolve, reject) => {
      client.once('ready', () => resolve());
      client.once('error', (error: Error) =>
        reject(
          new LambdaLoginPendingError(`cannot log in to ${options.host}: ${error.message}`, { cause: error }),
        ),
      );
      client.connect({
        host: options.host,
        port: options.port ?? LAMBDA_SSH_PORT,
        username: LAMBDA_SSH_USER,
        privateKey: options.privateKey,
        readyTimeout: SSH_READY_TIMEOUT_MS,
      });
    });
    const { code, stderr } = await new Promise<{ code: number | null; stderr: string }>((resolve, reject) => {
      const timer = setTimeout(
        () => reject(new LambdaBootstrapScriptError(`the bootstrap script ran over ${SCRIPT_TIMEOUT_MS} ms`)),
        SCRIPT_TIMEOUT_MS,
      );
      client.exec('sudo -n sh -s', (error: Error | undefined, channel: ClientChannel) => {
        if (error) {
          clearTimeout(timer);
          reject(
            new LambdaLoginPendingError(`cannot run the bootstrap on ${options.host}: ${error.message}`),
          );
          return;
        }
        let errors = '';
        channel.stderr.on('data', (chunk: Buffer) => {
          errors += chunk.toString('utf8');
        });
        channel.on('data', () => {});
        channel.on('exit', (exitCode: number | null) => {
          clearTimeout(timer);
          resolve({ code: exitCode, stderr: errors });
        });
        channel.end(script);
      });
    });
    if (code !== 0) {
      throw new LambdaBootstrapScriptError(
        `the bootstrap script exited with ${code} on ${options.host}: ${stderr.trim().slice(-2000)}`,
      );
    }
  } finally {
    client.end();
  }
}
