// Types of known-backends.mjs, for the tests in @dstack/testing.
export const KNOWN_BACKENDS_FILE: string;

export interface KnownBackend {
  type: string;
  packageName: string;
  catalog?: 'offline' | 'online';
}

export function backendsWithoutPackage(
  knownBackends: readonly KnownBackend[],
  installed: readonly {
    packageName: string;
    relativeDir: string;
    plugin: { type: string; catalogProvider?: { kind?: string } };
  }[],
): KnownBackend[];
