import { execFile } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';
import { formatLongestFiles } from './longest-files-reporter.js';

const run = promisify(execFile);
const FIXTURE = fileURLToPath(new URL('./__fixtures__/two-files/', import.meta.url));
const VITEST = join(dirname(createRequire(import.meta.url).resolve('vitest/package.json')), 'vitest.mjs');

describe('formatLongestFiles', () => {
  it('lists the longest files first, only as many as asked, then the summed and the run total', () => {
    const lines = formatLongestFiles(
      [
        { file: 'a.test.ts', milliseconds: 1_500 },
        { file: 'b.test.ts', milliseconds: 481_230 },
        { file: 'c.test.ts', milliseconds: 20_000 },
      ],
      2,
      490_000,
    );
    expect(lines).toEqual([
      'Longest test files (wall time, 2 of 3):',
      '  481.2 s  b.test.ts',
      '   20.0 s  c.test.ts',
      'Total: 502.7 s summed over the files, 490.0 s for the run',
    ]);
  });
});

describe('LongestFilesReporter in a real vitest run', () => {
  it("ends the run's output with the longest files after the default reporter's summary", async () => {
    // A vitest of its own in a child process, on two files; CI=true keeps its output plain.
    const scratch = mkdtempSync(join(tmpdir(), 'longest-files-'));
    const timesFile = join(scratch, 'times.json');
    const { stdout } = await run(process.execPath, [VITEST, 'run', '--root', FIXTURE], {
      env: { ...process.env, CI: 'true', NO_COLOR: '1', TIMES_FILE: timesFile },
      timeout: 120_000,
    });
    const lines = stdout.trimEnd().split('\n');
    const table = lines.findIndex((line) => line.startsWith('Longest test files'));
    expect(table, stdout).toBeGreaterThan(lines.findIndex((line) => line.includes('Tests  2 passed')));
    expect(lines[table]).toBe('Longest test files (wall time, 1 of 2):');
    expect(lines[table + 1]).toMatch(/^ +\d+\.\d s {2}(first|second)\.check\.ts$/);
    expect(lines[table + 2]).toMatch(/^Total: \d+\.\d s summed over the files, \d+\.\d s for the run$/);
    expect(lines).toHaveLength(table + 3);

    // Every file, longest first, in the file the reporter was given.
    const times = JSON.parse(readFileSync(timesFile, 'utf8')) as Array<{
      file: string;
      milliseconds: number;
    }>;
    rmSync(scratch, { recursive: true, force: true });
    expect(times.map((each) => each.file).sort()).toEqual(['first.check.ts', 'second.check.ts']);
    expect(times[0]?.milliseconds).toBeGreaterThanOrEqual(times[1]?.milliseconds ?? Number.POSITIVE_INFINITY);
  }, 120_000);
});
