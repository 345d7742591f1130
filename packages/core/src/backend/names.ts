import { createHash } from 'node:crypto';
import { isValidResourceName } from '../models/resource-names.js';

const SUFFIX_LENGTH = 8;
const SUFFIX_ALPHABET = 'abcdefghijklmnopqrstuvwxyz0123456789';

export const DEFAULT_MAX_RESOURCE_NAME_LENGTH = 60;

/** dstack's rule for names valid in every backend (`is_valid_dstack_resource_name`). */
export function isValidDstackResourceName(name: string): boolean {
  return isValidResourceName(name);
}

/** A deterministic `Math.random` stand-in: the SHA-256 bytes of `seed`, each over 256, in turn. */
function seededRandom(seed: string): () => number {
  const bytes = createHash('sha256').update(seed).digest();
  let index = 0;
  return () => (bytes[index++ % bytes.length] as number) / 256;
}

export interface UniqueBackendNameOptions {
  /** The longest name the cloud takes. Default 60. */
  readonly maxLength?: number;
  /**
   * Makes the suffix a function of `seed` (an instance id): the same seed gives the same name,
   * so a retried launch finds the resource the first attempt made. Default: a random suffix.
   */
  readonly seed?: string;
  /** Where the suffix's randomness comes from, when there is no `seed`. Default `Math.random`. */
  readonly random?: () => number;
}

/**
 * A cloud resource name unique on every call: `dstack-{project}-{name}-{8 random [a-z0-9]}`,
 * at most `maxLength` (60) characters, the prefix truncated to fit. Unique names let
 * re-submissions re-create resources on clouds that reject duplicate names (GCP, Azure).
 * The project is left out when it is not a valid dstack resource name
 * (`[a-z][a-z0-9-]{1,40}`); `name` is expected to be valid already.
 */
export function generateUniqueBackendName(
  projectName: string | null | undefined,
  name: string,
  options: UniqueBackendNameOptions = {},
): string {
  const maxLength = options.maxLength ?? DEFAULT_MAX_RESOURCE_NAME_LENGTH;
  const random = options.seed !== undefined ? seededRandom(options.seed) : (options.random ?? Math.random);
  const prefix =
    projectName != null && isValidDstackResourceName(projectName)
      ? `dstack-${projectName}-${name}`
      : `dstack-${name}`;
  let suffix = '';
  for (let i = 0; i < SUFFIX_LENGTH; i++) {
    suffix += SUFFIX_ALPHABET[Math.floor(random() * SUFFIX_ALPHABET.length)];
  }
  return `${prefix.slice(0, Math.max(0, maxLength - SUFFIX_LENGTH - 1))}-${suffix}`;
}

/**
 * The cloud name of a cluster fleet's placement group (dstack's `generate_unique_placement_group_name`):
 * `dstack-{project}-{fleet}-pg-{8 random [a-z0-9]}`, unique on every call, so a group deleted
 * with its fleet never blocks the next fleet of that name.
 */
export function generateUniquePlacementGroupName(
  projectName: string,
  fleetName: string,
  options: UniqueBackendNameOptions = {},
): string {
  return generateUniqueBackendName(projectName, `${fleetName}-pg`, options);
}

/**
 * Tags for a cloud resource (`merge_tags`): dstack's base tags win over the
 * backend config's tags, which win over the user's resource tags, so users
 * cannot override tags set by admins.
 */
export function mergeTags(
  base: Readonly<Record<string, string>>,
  backendTags?: Readonly<Record<string, string>> | null,
  resourceTags?: Readonly<Record<string, string>> | null,
): Record<string, string> {
  return { ...(resourceTags ?? {}), ...(backendTags ?? {}), ...base };
}
