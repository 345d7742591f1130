import { type ChildProcessByStdio, execFileSync, spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import type { Readable } from 'node:stream';
import { fileURLToPath } from 'node:url';

export type Child = ChildProcessByStdio<null, Readable, Readable>;

/** Builds `filter` with turbo when `requiredFile` is missing (tests of built bins run after a fresh clone too). */
export function buildIfMissing(requiredFile: string, filter: string): void {
  if (existsSync(requiredFile)) {
    return;
  }
  const repositoryRoot = fileURLToPath(new URL('../../../../', import.meta.url));
  execFileSync('pnpm', ['turbo', 'run', 'build', `--filter=${filter}`, '--output-logs=errors-only'], {
    cwd: repositoryRoot,
    stdio: 'inherit',
  });
  if (!existsSync(requiredFile)) {
    throw new Error(`${requiredFile} is still missing after building ${filter}`);
  }
}

/** Spawns `node script args...`, collecting its output. */
export function spawnNode(
  script: string,
  args: string[],
  env: NodeJS.ProcessEnv = process.env,
): { child: Child; output: () => string } {
  const child = spawn(process.execPath, [script, ...args], { stdio: ['ignore', 'pipe', 'pipe'], env });
  let output = '';
  child.stdout.on('data', (chunk: Buffer) => {
    output += chunk.toString();
  });
  child.stderr.on('data', (chunk: Buffer) => {
    output += chunk.toString();
  });
  return { child, output: () => output };
}

/** Resolves with the first match of `pattern` in the child's stdout; rejects if it exits first. */
export function waitForOutput(child: Child, pattern: RegExp): Promise<RegExpMatchArray> {
  return new Promise((resolve, reject) => {
    let stdout = '';
    const onData = (chunk: Buffer) => {
      stdout += chunk.toString();
      const match = pattern.exec(stdout);
      if (match !== null) {
        child.stdout.off('data', onData);
        child.off('exit', onExit);
        resolve(match);
      }
    };
    const onExit = (code: number | null) => reject(new Error(`exited (${code}) before printing ${pattern}`));
    child.stdout.on('data', onData);
    child.once('exit', onExit);
  });
}

/** Resolves with the exit code once the child has exited (at once if it already has). */
export function waitForExit(child: Child): Promise<number | null> {
  if (child.exitCode !== null || child.signalCode !== null) {
    return Promise.resolve(child.exitCode);
  }
  return new Promise((resolve) => child.once('exit', (code) => resolve(code)));
}

/** Stops a child left running by a failed test: SIGKILL, then wait. */
export async function killChild(child: Child | undefined): Promise<void> {
  if (child === undefined || child.exitCode !== null || child.signalCode !== null) {
    return;
  }
  child.kill('SIGKILL');
  await waitForExit(child);
}
