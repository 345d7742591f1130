import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { TestSpecification, Vitest } from 'vitest/node';
import { longestFilesFirst } from './longest-files-first.js';

describe('longestFilesFirst', () => {
  let root: string;
  beforeEach(() => {
    root = mkdtempSync(join(tmpdir(), 'longest-files-'));
    mkdirSync(join(root, 'test'));
    for (const name of ['slow.test.ts', 'slower.test.ts', 'quick.test.ts'])
      writeFileSync(join(root, 'test', name), '');
  });
  afterEach(() => rmSync(root, { recursive: true, force: true }));

  it('fails naming every listed file that does not exist', () => {
    expect(() =>
      longestFilesFirst(root, ['test/slow.test.ts', 'elsewhere/packed-install.test.ts', 'gone.test.ts']),
    ).toThrow(
      `the longest files the sequencer starts first do not exist: elsewhere/packed-install.test.ts, gone.test.ts (under ${root}; fix vitest.config.ts's LONGEST_FILES)`,
    );
  });

  it('starts the listed files first, in the listed order, the others after in vitest order', async () => {
    const Sequencer = longestFilesFirst(root, ['test/slower.test.ts', 'test/slow.test.ts']);
    // BaseSequencer.sort reads earlier runs' results and file sizes: a run that has none.
    const vitest = {
      cache: { getFileTestResults: () => undefined, getFileStats: () => undefined },
      config: { sequence: {} },
    } as unknown as Vitest;
    const spec = (name: string) =>
      ({ moduleId: join(root, 'test', name), project: { name: '' } }) as TestSpecification;
    const sorted = await new Sequencer(vitest).sort(
      ['quick.test.ts', 'slow.test.ts', 'slower.test.ts'].map(spec),
    );
    expect(sorted.map((each) => each.moduleId)).toEqual(
      ['slower.test.ts', 'slow.test.ts', 'quick.test.ts'].map((name) => join(root, 'test', name)),
    );
  });
});
