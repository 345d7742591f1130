/**
 * The `curl` provider of dstack's early "custom providers" guide, as a provider module:
 * `parameters: {url, output, artifacts?}` become one job that downloads `url` to `output`.
 * A task uses it with `provider: ./providers/curl.mjs` (see ../curl.dstack.yml).
 */
import { defineProvider } from '@dstack/core';
import { z } from 'zod';

/** Quotes a value for `sh`: inside single quotes only the single quote itself is special. */
function shellQuote(value) {
  return `'${value.replaceAll("'", `'\\''`)}'`;
}

export default defineProvider({
  name: 'curl',
  schema: z.object({
    /** What to download; http or https only, since the job hands it to curl. */
    url: z.url({ protocol: /^https?$/, error: 'expected an http or https URL' }),
    /** Where to save it, relative to the job's working directory. */
    output: z.string().min(1),
    /**
     * Paths the job must leave behind. dstack's early providers uploaded them; this dstack
     * keeps no artifacts yet, so the job checks they exist and fails when one is missing.
     */
    artifacts: z.array(z.string().min(1)).optional(),
  }),
  createJobs: ({ url, output, artifacts = [] }) => [
    {
      commands: [
        `curl -fsSL ${shellQuote(url)} -o ${shellQuote(output)}`,
        ...artifacts.map(
          (artifact) =>
            `test -e ${shellQuote(artifact)} || { echo ${shellQuote(`artifact ${artifact} is missing`)} >&2; exit 1; }`,
        ),
      ],
    },
  ],
});
