/**
 * The variables named in `names` that `environment` sets, and nothing else of it: how an agent
 * passes on only an allowlist of its own environment (the shim's, a job's base), never the whole.
 */
export function pickEnvironmentVariables(
  environment: Readonly<Record<string, string | undefined>>,
  names: readonly string[],
): Record<string, string> {
  const picked: Record<string, string> = {};
  for (const name of names) {
    const value = environment[name];
    if (value !== undefined) picked[name] = value;
  }
  return picked;
}
