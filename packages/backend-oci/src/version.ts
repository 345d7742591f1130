/** The version of @dstack/backend-oci. Kept equal to package.json's by a test. */
export const VERSION = '0.0.0';
