// Types of release-check.mjs, for the tests in @dstack/testing.
import type { PackageManifest, WorkspacePackage } from './workspace-packages.mjs';

export type BumpType = 'major' | 'minor' | 'patch';

export interface VersionBump {
  name: string;
  from: string;
  to: string;
  type: BumpType;
  /** Whether a changeset names the package (else a dependent bump). */
  requested: boolean;
}

export interface PackedPackage {
  name: string;
  version: string;
  /** Absolute path of the .tgz. */
  tarball: string;
  /** Paths inside the tarball (without `package/`), sorted. */
  files: string[];
  /** The packed package.json. */
  manifest: PackageManifest;
}

export function createScratchCopy(root: string): Promise<string>;
export function readRequestedBumps(root: string): Map<string, BumpType>;
export function versionPackages(root: string, scratch: string): Promise<VersionBump[]>;
export function checkVersionBumps(
  bumps: VersionBump[],
  requestedBumps: Map<string, BumpType>,
  packages: WorkspacePackage[],
): string[];
export function packPackage(packageDir: string, destination: string): Promise<PackedPackage>;
export function whyNotPublishable(path: string): string | null;
export function checkPackedPackage(packed: PackedPackage): string[];
export function packAndCheckPublicPackages(
  root: string,
  destination: string,
): Promise<{ packed: PackedPackage; problems: string[] }[]>;
export function findUnbuiltPackages(root: string): string[];
