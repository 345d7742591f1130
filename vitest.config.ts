import { defineConfig } from 'vitest/config';

// One vitest run for the whole workspace; each package is a project so
// `pnpm --filter @dstack/core test` and the root run share the same settings.
// `generators/` tests the plop generators (`pnpm plop backend`).
export default defineConfig({
  test: {
    projects: ['packages/*/vitest.config.ts', 'bench/vitest.config.ts', 'generators/vitest.config.ts'],
  },
});
