import { defineProject } from 'vitest/config';

export default defineProject({
  test: {
    name: '@dstack/runner-runtime-linux-x64',
    include: ['test/**/*.test.ts'],
    exclude: ['**/*.int.test.ts'],
  },
});
