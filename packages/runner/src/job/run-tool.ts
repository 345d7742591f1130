/**
 * Runs a tool the job's code needs (git) and fails with a message naming it: not installed
 * in the job's image, or its exit status and what it printed on stderr.
 */
import { spawn } from 'node:child_process';

export interface RunToolOptions {
  cwd?: string;
  /** Added to the runner's environment. */
  env?: Record<string, string>;
  /** The arguments as the error message shows them (default: all of them). */
  shownArgs?: readonly string[];
  /** Applied to the message's stderr (e.g. to hide passwords in URLs). */
  redact?: (text: string) => string;
}

export function runTool(command: string, args: string[], options: RunToolOptions = {}): Promise<void> {
  return new Promise((resolvePromise, reject) => {
    const child = spawn(command, args, {
      cwd: options.cwd,
      env: options.env === undefined ? process.env : { ...process.env, ...options.env },
      stdio: ['ignore', 'ignore', 'pipe'],
    });
    let stderr = '';
    child.stderr.on('data', (chunk: Buffer) => {
      if (stderr.length < 8192) stderr += chunk.toString();
    });
    child.once('error', (error: NodeJS.ErrnoException) =>
      reject(
        new Error(
          error.code === 'ENOENT'
            ? `${command} is not installed in the job's image: the job's code needs it`
            : `${command} could not start: ${error.message}`,
        ),
      ),
    );
    child.once('close', (code, signal) => {
      if (code === 0) return resolvePromise();
      const how = signal === null ? `exit status ${code}` : `signal ${signal}`;
      const shown = (options.shownArgs ?? args).join(' ');
      const output = options.redact ? options.redact(stderr.trim()) : stderr.trim();
      reject(new Error(`${command} ${shown} failed (${how}): ${output}`));
    });
  });
}
