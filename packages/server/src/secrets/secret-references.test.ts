import type { JobSpec } from '@dstack/core';
import { describe, expect, it } from 'vitest';
import {
  checkSecretReferences,
  referencesSecrets,
  resolveJobSpecSecrets,
  SecretReferenceError,
} from './secret-references.js';

/** The fields interpolation reads; the rest of a job spec is left as it is. */
function jobSpec(
  env: Record<string, string>,
  registryAuth?: { username: string; password: string },
): JobSpec {
  return { job_name: 'run-0-0', env, registry_auth: registryAuth ?? null } as unknown as JobSpec;
}

const SECRETS = new Map([
  ['hf_token', 'hf-value'],
  ['ngc', 'ngc-value'],
]);

function refusal(action: () => unknown): SecretReferenceError {
  try {
    action();
  } catch (error) {
    if (SecretReferenceError.isInstance(error)) return error;
    throw error;
  }
  throw new Error('expected a SecretReferenceError');
}

describe('secret references', () => {
  it('replaces secrets.NAME references (spaces optional) in env and registry_auth, as dstack does', () => {
    const spec = jobSpec(
      { A: `\${{ secrets.hf_token }}`, B: `x-\${{secrets.ngc}}-\${{ secrets.hf_token }}`, C: 'plain' },
      { username: '$oauthtoken', password: `\${{ secrets.ngc }}` },
    );
    const resolved = resolveJobSpecSecrets(spec, SECRETS);
    expect(resolved.env).toEqual({ A: 'hf-value', B: 'x-ngc-value-hf-value', C: 'plain' });
    expect(resolved.registry_auth).toEqual({ username: '$oauthtoken', password: 'ngc-value' });
    // The stored spec is not touched: it keeps the references.
    expect(spec.env.A).toBe(`\${{ secrets.hf_token }}`);
  });

  it("keeps dstack's escape: $$ is one $, so $${{ … }} stays as written", () => {
    const resolved = resolveJobSpecSecrets(
      jobSpec({ A: 'a$$b', B: `$\${{ secrets.ngc }}`, D: 'cost $5' }),
      SECRETS,
    );
    expect(resolved.env).toEqual({ A: 'a$b', B: `\${{ secrets.ngc }}`, D: 'cost $5' });
    // With no secrets at all (a spec without references), `$$` is unescaped just the same.
    expect(resolveJobSpecSecrets(jobSpec({ A: 'a$$b' }), new Map()).env).toEqual({ A: 'a$b' });
  });

  it('refuses an unknown secret, naming the env key and the secret', () => {
    const error = refusal(() =>
      checkSecretReferences(
        [jobSpec({ OK: `\${{ secrets.ngc }}`, HF: `\${{ secrets.missing }}` })],
        new Set(['ngc']),
      ),
    );
    expect(error.message).toMatch(/^env\.HF: secret "missing" does not exist/);
    expect(error.fields).toEqual([['run_spec', 'configuration', 'env', 'HF']]);
    const registry = refusal(() =>
      checkSecretReferences([jobSpec({}, { username: 'u', password: `\${{ secrets.gone }}` })], new Set()),
    );
    expect(registry.fields).toEqual([['run_spec', 'configuration', 'registry_auth', 'password']]);
  });

  it('refuses bad syntax and references outside secrets, naming the field', () => {
    const cases: Array<[string, RegExp]> = [
      [`\${{ secrets.x`, /^env\.V: no closing/],
      [`\${{ secrets.my-token }}`, /^env\.V: illegal reference name 'secrets.my-token'/],
      [`\${{ secrets }}`, /^env\.V: illegal reference name/],
      [`\${{ run.name }}`, /^env\.V: '\$\{\{ run\.name \}\}' is not a secret reference/],
    ];
    for (const [value, message] of cases) {
      const error = refusal(() => checkSecretReferences([jobSpec({ V: value })], new Set(['x'])));
      expect(error.message, value).toMatch(message);
      expect(error.fields, value).toEqual([['run_spec', 'configuration', 'env', 'V']]);
    }
  });

  it('refuses at submit a secret deleted since the run was accepted, without any value in the message', () => {
    const error = refusal(() =>
      resolveJobSpecSecrets(jobSpec({ A: `\${{ secrets.ngc }}`, B: `\${{ secrets.deleted }}` }), SECRETS),
    );
    expect(error.message).toMatch(/^env\.B: secret "deleted" does not exist/);
    expect(error.message).not.toContain('ngc-value');
  });

  it('tells which job specs need the secrets at all', () => {
    expect(referencesSecrets(jobSpec({ A: 'plain' }))).toBe(false);
    expect(referencesSecrets(jobSpec({ A: `\${{ secrets.x }}` }))).toBe(true);
    expect(referencesSecrets(jobSpec({}, { username: `\${{ secrets.x }}`, password: 'p' }))).toBe(true);
  });
});
