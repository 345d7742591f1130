import { defineProject } from 'vitest/config';

export default defineProject({
  test: {
    name: '@dstack/runner-runtime-linux-x64',
    // Generous and named: on a loaded 2-core machine a test that starts child processes (the CLI,
    // a server) passes vitest's 5 s default without anything being wrong.
    testTimeout: 30_000,
    hookTimeout: 60_000,
    include: ['test/**/*.test.ts'],
    exclude: ['**/*.int.test.ts'],
  },
});
