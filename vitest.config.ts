import { defineConfig } from 'vitest/config';

// One vitest run for the whole workspace; each package is a project so
// `pnpm --filter @dstack/core test` and the root run share the same settings.
// `generators/` tests the plop generators (`pnpm plop backend`).
export default defineConfig({
  test: {
    // Two test files at a time: vitest's default on 2 cores is one (cores - 1), and most of the
    // time of the slow files is spent waiting on containers, emulated hosts and child processes.
    maxWorkers: 2,
    projects: ['packages/*/vitest.config.ts', 'bench/vitest.config.ts', 'generators/vitest.config.ts'],
  },
});
