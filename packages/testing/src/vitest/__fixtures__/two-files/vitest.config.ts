import { defineConfig } from 'vitest/config';
import { LongestFilesReporter } from '../../longest-files-reporter.js';

// A run of two files with the reporter listing one of them (and, with TIMES_FILE set, writing
// both there), for longest-files-reporter.test.ts.
export default defineConfig({
  test: {
    include: ['*.check.ts'],
    reporters: ['default', new LongestFilesReporter({ count: 1, outputFile: process.env.TIMES_FILE })],
  },
});
