/**
 * A bench client in a node process of its own (an inline ES module), so that its work is not the
 * measured server's: it prints one JSON document on standard output as it ends.
 */
import { type ChildProcessByStdio, spawn } from 'node:child_process';
import type { Readable, Writable } from 'node:stream';

export interface ClientProcess {
  /** Its standard input: a client may read its task there, or stop when it ends. */
  child: ChildProcessByStdio<Writable, Readable, null>;
  /** What it printed, parsed, once it exited with status 0. */
  output: Promise<unknown>;
}

/** Starts `script`; `what` names it in the error of a failed exit. */
export function startClientProcess(
  script: string,
  what: string,
  env: NodeJS.ProcessEnv = process.env,
): ClientProcess {
  const child = spawn(process.execPath, ['--input-type=module', '-e', script], {
    env,
    stdio: ['pipe', 'pipe', 'inherit'],
  });
  let printed = '';
  child.stdout.setEncoding('utf8');
  child.stdout.on('data', (chunk: string) => {
    printed += chunk;
  });
  const output = new Promise<unknown>((resolve, reject) => {
    child.once('error', reject);
    // 'close', not 'exit': the process may exit before its output has all been read.
    child.once('close', (code) => {
      if (code === 0) resolve(JSON.parse(printed));
      else reject(new Error(`${what} exited with status ${code}`));
    });
  });
  return { child, output };
}
