/** The version of @dstack/backend-local. Kept equal to package.json's by a test. */
export const VERSION = '0.1.0';
