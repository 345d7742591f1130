// Types of tarball.mjs, for the tests in @dstack/testing.
export interface TarballEntry {
  /** The path inside the tarball, without `package/`. */
  path: string;
  content: Buffer;
}

export function readTarball(tarballPath: string): TarballEntry[];
