import { defineConfig } from 'vitest/config';

/** Runs only the conformance fixtures, for `test-backend.test.ts`. */
export default defineConfig({
  resolve: { conditions: ['source'] },
  test: { include: ['src/__fixtures__/*.fixture.ts'] },
});
