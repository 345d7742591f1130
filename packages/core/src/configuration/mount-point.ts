/**
 * Volume mounts of a run: `name:/path` (network volume), `/host/path:/path` (instance path), or
 * the long forms `{name, path}` and `{instance_path, path, optional}`.
 */
import * as z from 'zod';
import { isPlainObject, selectSchema, strictObject } from './schema-helpers.js';

const absolutePathSchema = z
  .string()
  .min(1)
  .refine((path) => path.startsWith('/'), { error: 'must be an absolute path' })
  .refine((path) => !path.split('/').includes('..'), { error: "must not contain '..'" });

const volumeMountPointSchema = strictObject({
  /** Network volume name, or several names of which any one is mounted. */
  name: z.union([z.string().min(1), z.array(z.string().min(1)).min(1)], {
    error: 'expected a volume name or a list of names',
  }),
  /** Absolute path in the container. */
  path: absolutePathSchema,
});

const instanceMountPointSchema = strictObject({
  /** Absolute path on the instance (host). */
  instance_path: absolutePathSchema,
  /** Absolute path in the container. */
  path: absolutePathSchema,
  /** Run anyway on backends without instance volumes. Default `false`. */
  optional: z.boolean().default(false),
});

function expandShorthand(value: unknown, ctx: z.RefinementCtx): unknown {
  if (typeof value !== 'string') return value;
  const parts = value.split(':');
  if (parts.length !== 2 || !parts[0] || !parts[1]) {
    ctx.addIssue({
      code: 'custom',
      message: `invalid volume '${value}': expected 'name:/container/path' or '/instance/path:/container/path'`,
      input: value,
    });
    return z.NEVER;
  }
  const [source, path] = parts as [string, string];
  return source.includes('/') ? { instance_path: source, path, optional: false } : { name: source, path };
}

/** A volume mount point (network volume or instance path). */
export const mountPointSchema = z.preprocess(
  expandShorthand,
  selectSchema(
    (value) =>
      isPlainObject(value) && 'instance_path' in value && !('name' in value)
        ? instanceMountPointSchema
        : volumeMountPointSchema,
    [volumeMountPointSchema, instanceMountPointSchema] as const,
  ),
);
export type VolumeMountPoint = z.infer<typeof volumeMountPointSchema>;
export type InstanceMountPoint = z.infer<typeof instanceMountPointSchema>;
export type MountPoint = VolumeMountPoint | InstanceMountPoint;
