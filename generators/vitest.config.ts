import { defineProject } from 'vitest/config';

export default defineProject({
  test: {
    name: 'generators',
    // Generous and named: on a loaded 2-core machine a test that starts child processes (the CLI,
    // a server) passes vitest's 5 s default without anything being wrong.
    testTimeout: 30_000,
    hookTimeout: 60_000,
    include: ['**/*.test.ts'],
    exclude: ['**/node_modules/**', '**/templates/**'],
  },
});
