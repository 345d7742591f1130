/**
 * dstack's Python client sends every unset optional field of a configuration and profile as an
 * explicit `null` (its models are dumped whole). In dstack's models `null` in an `Optional` field
 * means "not set", so the server reads such a `null` as an absent field before validating.
 */

/**
 * Mappings whose `null` values mean something else than "unset": `env: {NAME: null}` takes the
 * value from the submitting user's environment, so those nulls stay.
 */
const NULL_MEANINGFUL_KEYS: ReadonlySet<string> = new Set(['env']);

function isPlainObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** `value` with every `null` field of its objects (at any depth) removed, as if never sent. */
export function dropUnsetNulls<T>(value: T): T {
  if (Array.isArray(value)) return value.map((item) => dropUnsetNulls(item)) as T;
  if (!isPlainObject(value)) return value;
  const out: Record<string, unknown> = {};
  for (const [key, field] of Object.entries(value)) {
    if (field === null) continue;
    out[key] = NULL_MEANINGFUL_KEYS.has(key) ? field : dropUnsetNulls(field);
  }
  return out as T;
}

/** Profile fields that are not run parameters (the profile's own identity in `profiles.yml`). */
const PROFILE_IDENTITY_KEYS: ReadonlySet<string> = new Set(['name', 'default']);

/**
 * The configuration with the run spec's `profile` merged under it, as dstack merges them: a
 * parameter the configuration sets wins, the profile fills the ones it leaves unset. Our own CLI
 * merges `profiles.yml` itself and sends no profile; dstack's client sends one (all nulls when
 * `profiles.yml` has none).
 */
export function mergeProfileUnder(
  configuration: Record<string, unknown>,
  profile: Record<string, unknown> | null | undefined,
): Record<string, unknown> {
  if (!profile) return configuration;
  const fromProfile: Record<string, unknown> = {};
  for (const [key, field] of Object.entries(dropUnsetNulls(profile))) {
    if (!PROFILE_IDENTITY_KEYS.has(key)) fromProfile[key] = field;
  }
  return { ...fromProfile, ...configuration };
}
