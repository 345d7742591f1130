/**
 * The one error body of the server's HTTP API.
 */
import * as z from 'zod';

/** The one error body of the API (dstack's 400 shape): each problem with its field path. */
export const ApiErrorSchema = z.object({
  detail: z.array(
    z.object({
      msg: z.string(),
      code: z.string(),
      /** Path of the offending field in the request body, e.g. `["run_spec","configuration","resources","gpu"]`. */
      fields: z.array(z.array(z.union([z.string(), z.number()]))).nullish(),
    }),
  ),
});
export type ApiError = z.output<typeof ApiErrorSchema>;
