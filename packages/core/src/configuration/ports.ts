/** Port mappings: `8080`, `"80:8080"`, `"*:8080"` (any free local port) or the object form. */
import * as z from 'zod';
import { describeValue, strictObject } from './schema-helpers.js';

const PORT_EXPECTATION = "expected a port (8080), a mapping 'local:container' (80:8080) or '*:8080'";

const portNumberSchema = z.int().min(1).max(65_535);

const portMappingObjectSchema = strictObject({
  /** Local (or gateway-facing) port; `null` picks any free port (`*`). */
  local_port: portNumberSchema.nullable(),
  /** Port inside the container. */
  container_port: portNumberSchema,
});
export type PortMapping = z.infer<typeof portMappingObjectSchema>;

/** Parses `8080`, `80:8080` or `*:8080`; throws on bad input. */
export function parsePortMapping(text: string): PortMapping {
  const match = /^(?:(\d+|\*):)?(\d+)$/.exec(text.trim());
  if (!match) throw new Error(`invalid port mapping '${text}': ${PORT_EXPECTATION}`);
  const container = Number(match[2]);
  const local = match[1] === undefined ? container : match[1] === '*' ? null : Number(match[1]);
  return { local_port: local, container_port: container };
}

function normalisePort(defaultLocalPort: number | undefined) {
  return (value: unknown, ctx: z.RefinementCtx): unknown => {
    if (value === undefined) return value;
    if (typeof value === 'number') return { local_port: defaultLocalPort ?? value, container_port: value };
    if (typeof value === 'string') {
      if (defaultLocalPort !== undefined && /^\s*\d+\s*$/.test(value)) {
        return { local_port: defaultLocalPort, container_port: Number(value) };
      }
      try {
        return parsePortMapping(value);
      } catch (error) {
        ctx.addIssue({ code: 'custom', message: (error as Error).message, input: value });
        return z.NEVER;
      }
    }
    if (typeof value !== 'object' || value === null || Array.isArray(value)) {
      ctx.addIssue({
        code: 'custom',
        message: `${PORT_EXPECTATION}; got ${describeValue(value)}`,
        input: value,
      });
      return z.NEVER;
    }
    return value;
  };
}

/** A port to expose: `8080` maps 8080 to 8080. */
export const portMappingSchema = z.preprocess(normalisePort(undefined), portMappingObjectSchema);

/** A service's port: a bare number N means the gateway's port 80 forwards to N. */
export const servicePortSchema = z.preprocess(normalisePort(80), portMappingObjectSchema);
