import { defineProject } from 'vitest/config';

export default defineProject({
  test: {
    name: 'generators',
    include: ['**/*.test.ts'],
    exclude: ['**/node_modules/**', '**/templates/**'],
  },
});
