/**
 * A vitest sequencer that starts the files known to take minutes first. Without timings of an
 * earlier run (a fresh clone, CI) vitest starts the biggest files first, and the cloud end-to-end
 * files are small (their scenarios live in shared modules): started last, the longest one ran
 * alone at the end for minutes; started first, the other files share the second worker meanwhile.
 */
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { BaseSequencer, type TestSpecification, type Vitest } from 'vitest/node';

/**
 * The sequencer class for `test.sequence.sequencer`, given the files (relative to `root`) longest
 * first. A listed path that does not exist fails the run at once: a moved file would otherwise
 * silently lose its rank (as `packages/server/test/packed-install.test.ts` did, which is in
 * `packages/testing/test/`).
 */
export function longestFilesFirst(
  root: string,
  longestFiles: readonly string[],
): new (
  vitest: Vitest,
) => BaseSequencer {
  const missing = longestFiles.filter((file) => !existsSync(join(root, file)));
  if (missing.length > 0) {
    throw new Error(
      `the longest files the sequencer starts first do not exist: ${missing.join(', ')} (under ${root}; fix vitest.config.ts's LONGEST_FILES)`,
    );
  }
  const paths = longestFiles.map((file) => join(root, file));
  const rank = (file: TestSpecification) => {
    const index = paths.indexOf(file.moduleId);
    return index === -1 ? paths.length : index;
  };
  return class LongestFilesFirst extends BaseSequencer {
    override async sort(files: TestSpecification[]): Promise<TestSpecification[]> {
      const sorted = await super.sort(files);
      // Array.prototype.sort is stable: the other files keep vitest's order.
      return sorted.sort((a, b) => rank(a) - rank(b));
    }
  };
}
