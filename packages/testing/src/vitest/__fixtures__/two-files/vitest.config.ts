import { defineConfig } from 'vitest/config';
import { LongestFilesReporter } from '../../longest-files-reporter.js';

// A run of two files with the reporter listing one of them, for longest-files-reporter.test.ts.
export default defineConfig({
  test: {
    include: ['*.check.ts'],
    reporters: ['default', new LongestFilesReporter({ count: 1 })],
  },
});
