import { execFile, spawn } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parse } from 'yaml';

// These tests run the built bin as a real child process: build first (`pnpm build`).
const bin = fileURLToPath(new URL('../../dist/bin/dstack.js', import.meta.url));
const example = fileURLToPath(
  new URL('../../../../examples/dstack/misc__http.server__task.dstack.yml', import.meta.url),
);
const packageVersion = (
  JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as { version: string }
).version;

interface Result {
  code: number;
  stdout: string;
  stderr: string;
}

function dstack(...args: string[]): Promise<Result> {
  return new Promise((resolve) => {
    execFile(
      process.execPath,
      [bin, ...args],
      { env: { ...process.env, NO_COLOR: '1' }, timeout: 20_000 },
      (error, stdout, stderr) => {
        const code = error ? (typeof error.code === 'number' ? error.code : -1) : 0;
        resolve({ code, stdout, stderr });
      },
    );
  });
}

let dir: string;

beforeAll(() => {
  if (!existsSync(bin)) throw new Error(`${bin} does not exist: run \`pnpm build\` before these tests`);
  dir = mkdtempSync(join(tmpdir(), 'dstack-cli-'));
});

afterAll(() => {
  rmSync(dir, { recursive: true, force: true });
});

describe('dstack validate (built bin)', () => {
  it.skipIf(!existsSync(example))('prints a valid configuration as YAML with defaults applied', async () => {
    const result = await dstack('validate', '-f', example);
    expect(result.stderr).toBe('');
    expect(result.code).toBe(0);
    const printed = parse(result.stdout);
    expect(printed).toMatchObject({
      type: 'task',
      python: '3.11',
      commands: ['python3 -m http.server'],
      resources: { cpu: { count: { min: 2 } }, memory: { min: 8 }, disk: { size: { min: 100 } } },
    });
  });

  it.skipIf(!existsSync(example))('prints JSON with --format json and accepts --file', async () => {
    const result = await dstack('validate', '--file', example, '--format', 'json');
    expect(result.code).toBe(0);
    const printed = JSON.parse(result.stdout);
    expect(printed.type).toBe('task');
    expect(printed.commands).toEqual(['python3 -m http.server']);
  });

  it('reports an invalid field as file:line:column: field.path: message and exits 1', async () => {
    const file = join(dir, 'invalid.dstack.yml');
    writeFileSync(file, 'type: task\ncommands:\n  - echo hi\nresources:\n  gpu: "A100:lots"\n');
    const result = await dstack('validate', '-f', file);
    expect(result.code).toBe(1);
    expect(result.stdout).toBe('');
    expect(result.stderr).toMatch(new RegExp(`^${file.replaceAll('.', '\\.')}:5:8: resources\\.gpu: .+\\n$`));
  });

  it('reports a YAML syntax error with its position', async () => {
    const file = join(dir, 'broken.dstack.yml');
    writeFileSync(file, 'type: task\ncommands: [echo\n');
    const result = await dstack('validate', '-f', file);
    expect(result.code).toBe(1);
    expect(result.stderr.startsWith(`${file}:`)).toBe(true);
    expect(result.stderr).toMatch(/:\d+:\d+: /);
  });

  it('says so when the file does not exist', async () => {
    const file = join(dir, 'missing.dstack.yml');
    const result = await dstack('validate', '-f', file);
    expect(result.code).toBe(1);
    expect(result.stderr).toBe(`${file}: no such file\n`);
  });

  it('requires -f', async () => {
    const result = await dstack('validate');
    expect(result.code).toBe(1);
    expect(result.stderr).toContain("required option '-f, --file <file>' not specified");
  });
});

describe('dstack (built bin)', () => {
  it('prints its version', async () => {
    const result = await dstack('--version');
    expect(result).toEqual({ code: 0, stdout: `${packageVersion}\n`, stderr: '' });
  });

  it('prints help', async () => {
    const result = await dstack('--help');
    expect(result.code).toBe(0);
    expect(result.stdout).toContain('Usage: dstack');
    expect(result.stdout).toContain('validate');
    const sub = await dstack('validate', '--help');
    expect(sub.code).toBe(0);
    expect(sub.stdout).toContain('--format <format>');
  });

  it('rejects an unknown command', async () => {
    const result = await dstack('bogus');
    expect(result.code).toBe(1);
    expect(result.stderr).toContain("unknown command 'bogus'");
  });
});

/**
 * Runs the built bin with its stdout read by a reader that closes the pipe after the first
 * chunk, as `dstack logs RUN | head` does. Resolves with the exit code and stderr.
 */
function dstackIntoClosingReader(...args: string[]): Promise<{ code: number | null; stderr: string }> {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, [bin, ...args], {
      env: { ...process.env, NO_COLOR: '1' },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stderr = '';
    child.stderr.on('data', (chunk: Buffer) => {
      stderr += chunk.toString();
    });
    child.stdout.once('data', () => child.stdout.destroy());
    child.once('close', (code) => resolve({ code, stderr }));
  });
}

describe('dstack writing into a pipe closed early (built bin)', () => {
  it('exits quietly, without a stack trace, each time', async () => {
    // Far more output than a pipe holds, so that writes are still pending when the reader leaves.
    const file = join(dir, 'long-output.dstack.yml');
    const commands = Array.from(
      { length: 3_000 },
      (_, index) => `  - echo ${'x'.repeat(240)} ${index}\n`,
    ).join('');
    writeFileSync(file, `type: task\ncommands:\n${commands}`);
    for (let attempt = 0; attempt < 3; attempt++) {
      const result = await dstackIntoClosingReader('validate', '-f', file);
      expect(result).toEqual({ code: 0, stderr: '' });
    }
  }, 60_000);
});
