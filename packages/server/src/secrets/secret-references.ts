/**
 * `${{ secrets.NAME }}` in a job's `env` values and `registry_auth`, interpolated as dstack's
 * `VariablesInterpolator` does (`$$` escapes a `$`; a reference is `namespace.name` of letters,
 * digits and `_`). The stored run and job specs keep the references; the values are put in only
 * for what is handed to the job's agents (`resolveJobSpecSecrets`), so they are never stored,
 * logged or returned by the API. Errors name the field and the secret, never a value.
 */
import { type JobSpec, ServerClientError } from '@dstack/core';

const OPENING = '${{';
const CLOSING = '}}';
const SECRETS_NAMESPACE = 'secrets';

const NAME_FIRST_CHAR = /[A-Za-z_]/;
const NAME_CHARS = /^[A-Za-z0-9_.]+$/;

/** A value that is not valid interpolation syntax, or that references something unknown. */
export class SecretReferenceError extends ServerClientError {
  static override readonly marker: string = '@dstack/server/SecretReferenceError';
  override readonly name: string = 'SecretReferenceError';
}

/** dstack's `VariablesInterpolator.validate_name`: `namespace.name`, each part starting with a letter or `_`. */
function isValidReferenceName(name: string): boolean {
  const dot = name.indexOf('.');
  if (dot <= 0 || dot !== name.lastIndexOf('.') || dot === name.length - 1) return false;
  return NAME_FIRST_CHAR.test(name[0]!) && NAME_FIRST_CHAR.test(name[dot + 1]!) && NAME_CHARS.test(name);
}

interface Interpolated {
  text: string;
  /** References that `lookup` had no value for, as written (`secrets.NAME`, `run.name`). */
  missing: string[];
}

/**
 * dstack's interpolation of one value, step for step (its quirks included, so that a value means
 * the same here as there). Throws a plain Error for bad syntax; the caller names the field.
 */
function interpolate(value: string, lookup: (reference: string) => string | undefined): Interpolated {
  const tokens: string[] = [];
  const missing: string[] = [];
  let start = 0;
  while (start < value.length) {
    const dollar = value.indexOf('$', start);
    if (dollar === -1 || dollar === value.length - 1) {
      tokens.push(value.slice(start));
      break;
    }
    if (value[dollar + 1] === '$') {
      tokens.push(value.slice(start, dollar + 1));
      start = dollar + 2;
      continue;
    }
    const opening = value.indexOf(OPENING, start);
    if (opening === -1) {
      tokens.push(value.slice(start));
      break;
    }
    tokens.push(value.slice(start, opening));
    const closing = value.indexOf(CLOSING, opening);
    if (closing === -1) throw new Error(`no closing '${CLOSING}' after '${OPENING}'`);
    const reference = value.slice(opening + OPENING.length, closing).trim();
    if (!isValidReferenceName(reference)) throw new Error(`illegal reference name '${reference}'`);
    const resolved = lookup(reference);
    if (resolved === undefined) missing.push(reference);
    else tokens.push(resolved);
    start = closing + CLOSING.length;
  }
  return { text: tokens.join(''), missing };
}

/** The fields of a job spec that references are interpolated in, with their path in the run spec. */
function interpolatedFields(jobSpec: JobSpec): Array<{ path: string[]; value: string }> {
  const fields = Object.entries(jobSpec.env).map(([key, value]) => ({
    path: ['run_spec', 'configuration', 'env', key],
    value,
  }));
  if (jobSpec.registry_auth) {
    for (const key of ['username', 'password'] as const) {
      fields.push({
        path: ['run_spec', 'configuration', 'registry_auth', key],
        value: jobSpec.registry_auth[key],
      });
    }
  }
  return fields;
}

function fieldName(path: readonly string[]): string {
  return path.slice(2).join('.');
}

function secretOf(reference: string): string | null {
  const [namespace, name] = reference.split('.');
  return namespace === SECRETS_NAMESPACE ? name! : null;
}

/** What is wrong with one field: bad syntax, a reference outside `secrets`, or a secret the project lacks. */
function checkField(path: readonly string[], value: string, has: (secret: string) => boolean): void {
  let result: Interpolated;
  try {
    result = interpolate(value, (reference) => {
      const secret = secretOf(reference);
      return secret !== null && has(secret) ? '' : undefined;
    });
  } catch (error) {
    throw new SecretReferenceError(`${fieldName(path)}: ${(error as Error).message}`, { fields: [path] });
  }
  const [first] = result.missing;
  if (first === undefined) return;
  const secret = secretOf(first);
  throw new SecretReferenceError(
    secret === null
      ? `${fieldName(path)}: '\${{ ${first} }}' is not a secret reference; only \${{ secrets.NAME }} is interpolated here`
      : `${fieldName(path)}: secret "${secret}" does not exist in this project (a project admin sets it with \`dstack secret set ${secret} VALUE\`)`,
    { fields: [path] },
  );
}

/**
 * Checks every reference of the job specs against the project's secret names, before anything
 * is stored or provisioned: a 400 naming the field and the secret.
 */
export function checkSecretReferences(jobSpecs: readonly JobSpec[], secretNames: ReadonlySet<string>): void {
  for (const jobSpec of jobSpecs) {
    for (const { path, value } of interpolatedFields(jobSpec)) {
      checkField(path, value, (secret) => secretNames.has(secret));
    }
  }
}

/** Whether any of the job spec's interpolated fields holds `${{`, i.e. needs the project's secrets. */
export function referencesSecrets(jobSpec: JobSpec): boolean {
  return interpolatedFields(jobSpec).some(({ value }) => value.includes(OPENING));
}

/**
 * The job spec with its references replaced by the secrets' values: only for the agents (the
 * shim's task, the runner's submit), never to be stored. A secret deleted since the run was
 * accepted is a `SecretReferenceError` naming the field and the secret.
 */
export function resolveJobSpecSecrets(jobSpec: JobSpec, secrets: ReadonlyMap<string, string>): JobSpec {
  const resolve = (path: readonly string[], value: string): string => {
    checkField(path, value, (secret) => secrets.has(secret));
    return interpolate(value, (reference) => secrets.get(secretOf(reference) ?? '')).text;
  };
  const env = Object.fromEntries(
    Object.entries(jobSpec.env).map(([key, value]) => [
      key,
      resolve(['run_spec', 'configuration', 'env', key], value),
    ]),
  );
  const registryAuth = jobSpec.registry_auth
    ? {
        username: resolve(
          ['run_spec', 'configuration', 'registry_auth', 'username'],
          jobSpec.registry_auth.username,
        ),
        password: resolve(
          ['run_spec', 'configuration', 'registry_auth', 'password'],
          jobSpec.registry_auth.password,
        ),
      }
    : jobSpec.registry_auth;
  return { ...jobSpec, env, registry_auth: registryAuth };
}
