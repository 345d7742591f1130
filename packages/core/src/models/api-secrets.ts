/**
 * A project's secrets as the server's HTTP API answers them (`secrets/*`).
 */
import * as z from 'zod';

/** dstack's `_SECRET_VALUE_MAX_LENGTH`. */
export const SECRET_VALUE_MAX_LENGTH = 5000;
/** A project's secret; `value` is null where the caller sees names only (`secrets/list`). */
export const SecretSchema = z.object({
  id: z.string(),
  name: z.string(),
  value: z.string().nullable(),
});
export type Secret = z.output<typeof SecretSchema>;
