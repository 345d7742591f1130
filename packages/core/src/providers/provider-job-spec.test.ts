import { describe, expect, it } from 'vitest';
import { ProviderError } from './provider-error.js';
import { ProviderJobSpecSchema, validateProviderJobs } from './provider-job-spec.js';

describe('ProviderJobSpecSchema', () => {
  it('accepts the fields a provider decides', () => {
    const job = {
      name: 'fetch',
      image: 'curlimages/curl',
      commands: ['curl -fsSL https://example.com -o out'],
      env: { A: '1' },
      working_dir: '/data',
    };
    expect(ProviderJobSpecSchema.parse(job)).toEqual(job);
    expect(ProviderJobSpecSchema.parse({ commands: ['true'] })).toEqual({ commands: ['true'] });
  });
});

describe('validateProviderJobs', () => {
  const problem = (jobs: unknown) => {
    try {
      validateProviderJobs(jobs, 'curl', './curl.mjs');
    } catch (error) {
      expect(ProviderError.isInstance(error)).toBe(true);
      expect((error as ProviderError).specifier).toBe('./curl.mjs');
      return (error as Error).message;
    }
    throw new Error('expected the jobs to be invalid');
  };

  it('returns valid jobs', () => {
    expect(validateProviderJobs([{ commands: ['a'] }, { commands: ['b'], env: {} }], 'x')).toEqual([
      { commands: ['a'] },
      { commands: ['b'], env: {} },
    ]);
  });

  it('rejects a result that is not a non-empty list', () => {
    expect(problem(undefined)).toBe(
      "provider 'curl': createJobs returned nothing, expected a list of job specs",
    );
    expect(problem({ commands: ['a'] })).toBe(
      "provider 'curl': createJobs returned a mapping, expected a list of job specs",
    );
    expect(problem([])).toBe("provider 'curl': createJobs returned no jobs, expected at least one job spec");
  });

  it('names the job index and the field', () => {
    expect(problem([{ commands: ['a'] }, { commands: [] }])).toBe(
      "provider 'curl': createJobs returned an invalid job spec: jobs[1].commands: must not be empty",
    );
    expect(problem([{ commands: ['a'], env: { A: 1 } }])).toBe(
      "provider 'curl': createJobs returned an invalid job spec: jobs[0].env.A: expected a string, got 1",
    );
    expect(problem([{}])).toBe(
      "provider 'curl': createJobs returned an invalid job spec: jobs[0].commands: required field 'commands' is missing",
    );
    expect(problem([{ command: ['a'], commands: ['a'] }])).toBe(
      "provider 'curl': createJobs returned an invalid job spec: unknown field 'command' in jobs[0]; did you mean 'commands'?",
    );
  });
});
