/** The shim's version, reported by `GET /api/healthcheck` and in shim.json. Kept equal to package.json's by a test. */
export const VERSION = '0.1.0';
