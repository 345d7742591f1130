import { defineProject } from 'vitest/config';

// Benchmarks are run by `pnpm bench`, not by the test run; this project only
// holds tests of the bench helpers themselves.
export default defineProject({
  resolve: { conditions: ['source'] },
  test: { name: 'bench', include: ['**/*.test.ts'] },
});
