/**
 * What a provider's `createJobs` returns for each job: the few fields a provider decides.
 * Everything else (resources, retry, durations, ports) comes from the task configuration.
 */
import * as z from 'zod';
import { describeIssue } from '../configuration/configuration-error.js';
import { describeValue, formatFieldPath, strictObject } from '../configuration/schema-helpers.js';
import { ProviderError } from './provider-error.js';

export const ProviderJobSpecSchema = strictObject({
  /** A label shown in the plan. Default: the provider's name. */
  name: z.string().min(1).optional(),
  /** Docker image of the job. Default: the configuration's `image`, else dstack's base image. */
  image: z.string().min(1).optional(),
  /** Shell commands, run in order; at least one. */
  commands: z.array(z.string().min(1)).min(1),
  /** Environment variables, set over the configuration's `env`. Default `{}`. */
  env: z.record(z.string(), z.string()).optional(),
  /** Working directory of the job. Default: the configuration's `working_dir`. */
  working_dir: z.string().min(1).optional(),
});
/** A job spec as `createJobs` may return it. */
export type ProviderJobSpecInput = z.input<typeof ProviderJobSpecSchema>;
/** A validated provider job spec, as sent in the run spec's `provider_jobs`. */
export type ProviderJobSpec = z.output<typeof ProviderJobSpecSchema>;

/**
 * Checks what `createJobs` returned: a non-empty array of job specs. Throws `ProviderError`
 * naming the provider, the job index and the field (`jobs[0].commands: must not be empty`).
 */
export function validateProviderJobs(
  jobs: unknown,
  providerName: string,
  specifier?: string,
): ProviderJobSpec[] {
  const fail = (problem: string) =>
    new ProviderError(`provider '${providerName}': createJobs returned ${problem}`, {
      ...(specifier === undefined ? {} : { specifier }),
    });
  if (!Array.isArray(jobs)) throw fail(`${describeValue(jobs)}, expected a list of job specs`);
  if (jobs.length === 0) throw fail('no jobs, expected at least one job spec');
  return jobs.map((job, index) => {
    const result = ProviderJobSpecSchema.safeParse(job, { reportInput: true });
    if (result.success) return result.data;
    const [issue] = result.error.issues;
    if (!issue) throw fail(`an invalid job spec at jobs[${index}]`);
    const issuePath = issue.path.map((segment) => (typeof segment === 'number' ? segment : String(segment)));
    const path = ['jobs', index, ...issuePath];
    const field = issuePath.at(-1);
    const where = formatFieldPath(path);
    const message = describeIssue(issue, where, field);
    // An unknown-field message already names where it is.
    throw fail(
      `an invalid job spec: ${issue.code === 'unrecognized_keys' ? message : `${where}: ${message}`}`,
    );
  });
}
