import { fileURLToPath } from 'node:url';
import { defineConfig } from 'vitest/config';
import { longestFilesFirst } from './packages/testing/src/vitest/longest-files-first.js';
import { LongestFilesReporter } from './packages/testing/src/vitest/longest-files-reporter.js';

const ROOT = fileURLToPath(new URL('.', import.meta.url));

/**
 * The files that take minutes, longest first (relative to the repository's root), started
 * first so that the workers finish together. The reporter's table at the end of a run says
 * which they are; a path that does not exist fails the run.
 */
const LONGEST_FILES = [
  'packages/server/test/gcp-emulator.test.ts',
  'packages/server/test/aws-clusters-volumes.test.ts',
  'packages/server/test/aws-emulator.test.ts',
  'generators/backend/backend-generator.test.ts',
  'packages/server/test/nebius-emulator.test.ts',
  'packages/testing/test/packed-install.test.ts',
  'packages/server/test/gateway-aws.test.ts',
  'packages/server/test/azure-emulator.test.ts',
  'packages/server/test/oci-emulator.test.ts',
  'packages/server/test/service-scaling.test.ts',
  'packages/server/test/aws-server-killed.test.ts',
  'packages/server/test/local-capacity.test.ts',
  'packages/server/test/run-schedule.test.ts',
  'packages/server/test/aws-torchrun.test.ts',
  'packages/server/test/vastai-emulator.test.ts',
  'packages/server/test/lambda-emulator.test.ts',
  'packages/server/test/verda-emulator.test.ts',
  'packages/server/test/kubernetes-cluster.test.ts',
  'packages/server/test/runpod-emulator.test.ts',
  'packages/server/test/slurm-cluster.test.ts',
];

// One vitest run for the whole workspace; each package is a project so
// `pnpm --filter @dstack/core test` and the root run share the same settings.
// `generators/` tests the plop generators (`pnpm plop backend`).
export default defineConfig({
  test: {
    // Three test files at a time: vitest's default on 2 cores is one (cores - 1), and most of the
    // time of the slow files is spent waiting on containers, emulated hosts and child processes
    // (with two, a third of the CPU stayed idle over a whole run).
    maxWorkers: 3,
    sequence: { sequencer: longestFilesFirst(ROOT, LONGEST_FILES) },
    // The Docker images the run's tests use (the Debian-based ones from one debootstrap) are
    // built here, before any worker starts, rather than inside a test's timeout.
    globalSetup: ['./packages/testing/src/vitest/test-images-setup.ts'],
    // The default reporter's output, then the 15 longest files and their wall time;
    // DSTACK_TEST_FILE_TIMES=<path> also writes every file's time there as JSON.
    reporters: [
      'default',
      new LongestFilesReporter({ count: 15, outputFile: process.env.DSTACK_TEST_FILE_TIMES || undefined }),
    ],
    projects: ['packages/*/vitest.config.ts', 'bench/vitest.config.ts', 'generators/vitest.config.ts'],
  },
});
