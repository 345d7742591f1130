/**
 * API request bodies refuse the top-level fields they do not know, as the configuration
 * schemas do: a field the server does not know would otherwise be dropped silently, and the
 * client would believe it was honoured (a misspelt `forse: true`, a field of a newer dstack).
 */
import type { z } from 'zod';
import { strictObject } from '../configuration/schema-helpers.js';

type SchemaDefinition = z.core.$ZodTypeDef & {
  innerType?: z.ZodType;
  shape?: z.ZodRawShape;
  catchall?: z.ZodType;
};

/**
 * `schema` with unknown top-level fields refused ("unknown field 'forse'; did you mean
 * 'force'?"). Objects declared loose (`z.looseObject`, whose extra fields are checked further
 * on, e.g. a backend's own config) or already strict stay as they are; `.optional()` and
 * `.nullable()` wrappers are kept around the strict object, and the object's own checks too.
 */
export function strictRequestBody<Schema extends z.ZodType>(schema: Schema): Schema {
  // By `def.type` rather than `instanceof`: a caller's schemas may come from another copy of zod.
  const def = schema.def as SchemaDefinition;
  if (def.type === 'optional') return strictRequestBody(def.innerType!).optional() as unknown as Schema;
  if (def.type === 'nullable') return strictRequestBody(def.innerType!).nullable() as unknown as Schema;
  if (def.type !== 'object' || def.catchall !== undefined) return schema;
  const checks = (def.checks ?? []) as Array<z.core.$ZodCheck<Record<string, unknown>>>;
  return strictObject(def.shape!).check(...checks) as unknown as Schema;
}
