// Types of workspace-packages.mjs, for the tests in @dstack/testing.
export interface PackageManifest {
  name: string;
  version: string;
  private?: boolean;
  files?: string[];
  dependencies?: Record<string, string>;
  devDependencies?: Record<string, string>;
  peerDependencies?: Record<string, string>;
  optionalDependencies?: Record<string, string>;
  [field: string]: unknown;
}

export interface WorkspacePackage {
  /** npm name, e.g. `@dstack/core`. */
  name: string;
  /** Absolute directory. */
  dir: string;
  /** Directory relative to the workspace root, e.g. `packages/core`. */
  relativeDir: string;
  /** The parsed package.json. */
  manifest: PackageManifest;
  /** Whether `private: true` (never published). */
  isPrivate: boolean;
}

export function readWorkspaceGlobs(root: string): string[];
export function listWorkspacePackages(root: string): WorkspacePackage[];
export function listPublicPackages(root: string): WorkspacePackage[];
export function readCatalog(root: string): Map<string, string>;
