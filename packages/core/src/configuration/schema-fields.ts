/**
 * Every field path a configuration schema accepts, read from the zod schema itself: code that
 * must decide something for each field (the server's table of honoured and refused fields) can
 * check that it has missed none, including fields added later.
 */
import type { z } from 'zod';
import { selectSchemaOptions } from './schema-helpers.js';

/** The parts of a zod schema's definition the walk reads. */
interface WalkedDef {
  type: string;
  shape?: Record<string, z.ZodType>;
  innerType?: z.ZodType;
  in?: z.ZodType;
  out?: z.ZodType;
  element?: z.ZodType;
  options?: readonly z.ZodType[];
}

const WRAPPERS = new Set(['optional', 'nullable', 'default', 'prefault', 'readonly', 'catch', 'nonoptional']);

/**
 * The field paths of `schema`, sorted: `name`, `resources.gpu`, `replicas[].count`. Array
 * elements add `[]`; unions and `selectSchema` choices contribute the fields of every branch;
 * records (user keys such as `env`) and scalars are leaves.
 */
export function schemaFieldPaths(schema: z.ZodType): string[] {
  const paths = new Set<string>();
  walk(schema, '', paths, new Set());
  return [...paths].sort();
}

function walk(schema: z.ZodType, prefix: string, paths: Set<string>, visiting: Set<z.ZodType>): void {
  if (visiting.has(schema)) return;
  visiting.add(schema);
  const choices = selectSchemaOptions(schema);
  if (choices) {
    for (const choice of choices) walk(choice, prefix, paths, visiting);
  } else {
    const def = (schema as unknown as { _zod: { def: WalkedDef } })._zod.def;
    if (def.type === 'object' && def.shape) {
      for (const [key, field] of Object.entries(def.shape)) {
        const path = prefix === '' ? key : `${prefix}.${key}`;
        paths.add(path);
        walk(field, path, paths, visiting);
      }
    } else if (WRAPPERS.has(def.type) && def.innerType) {
      walk(def.innerType, prefix, paths, visiting);
    } else if (def.type === 'pipe') {
      // A preprocess is a pipe from a transform to the schema; a plain transform ends in one.
      if (def.in) walk(def.in, prefix, paths, visiting);
      if (def.out) walk(def.out, prefix, paths, visiting);
    } else if (def.type === 'array' && def.element) {
      walk(def.element, `${prefix}[]`, paths, visiting);
    } else if (def.type === 'union' && def.options) {
      for (const option of def.options) walk(option, prefix, paths, visiting);
    }
  }
  visiting.delete(schema);
}
