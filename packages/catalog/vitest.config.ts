import { defineProject } from 'vitest/config';

export default defineProject({
  resolve: { conditions: ['source'] },
  test: {
    name: '@dstack/catalog',
    // Generous and named: on a loaded 2-core machine a test that starts child processes (the CLI,
    // a server) passes vitest's 5 s default without anything being wrong.
    testTimeout: 30_000,
    hookTimeout: 60_000,
    include: ['src/**/*.test.ts', 'test/**/*.test.ts'],
    exclude: ['**/*.int.test.ts'],
  },
});
