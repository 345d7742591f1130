import { defineConfig } from 'vitest/config';
import { BaseSequencer, type TestSpecification } from 'vitest/node';

/**
 * The files that take minutes, longest first. Without timings of an earlier run (a fresh clone,
 * CI) vitest starts the biggest files first, and the cloud end-to-end files are small: their
 * scenarios live in shared modules (`vm-cloud-runs.ts`, …). Started last, the longest one ran
 * alone at the end for 7 minutes; started first, the other files share the second worker meanwhile.
 */
const LONGEST_FILES = [
  'packages/server/test/aws-emulator.test.ts',
  'packages/server/test/gcp-emulator.test.ts',
  'packages/server/test/packed-install.test.ts',
  'generators/backend/backend-generator.test.ts',
];

class LongestFilesFirst extends BaseSequencer {
  override async sort(files: TestSpecification[]): Promise<TestSpecification[]> {
    const sorted = await super.sort(files);
    const rank = (file: TestSpecification) => {
      const index = LONGEST_FILES.findIndex((name) => file.moduleId.endsWith(name));
      return index === -1 ? LONGEST_FILES.length : index;
    };
    // Array.prototype.sort is stable: the other files keep vitest's order.
    return sorted.sort((a, b) => rank(a) - rank(b));
  }
}

// One vitest run for the whole workspace; each package is a project so
// `pnpm --filter @dstack/core test` and the root run share the same settings.
// `generators/` tests the plop generators (`pnpm plop backend`).
export default defineConfig({
  test: {
    // Two test files at a time: vitest's default on 2 cores is one (cores - 1), and most of the
    // time of the slow files is spent waiting on containers, emulated hosts and child processes.
    maxWorkers: 2,
    sequence: { sequencer: LongestFilesFirst },
    projects: ['packages/*/vitest.config.ts', 'bench/vitest.config.ts', 'generators/vitest.config.ts'],
  },
});
