/** This package's version (equal to package.json's; `version.test.ts` checks it). */
export const VERSION = '0.1.0';
