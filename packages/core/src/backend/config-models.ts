import * as z from 'zod';
import { BackendPluginError } from '../errors.js';
import type { BackendRecord } from './configurator.js';

type CredsShapes = Record<string, z.ZodRawShape | z.ZodObject>;
type ShapeOf<T> = T extends z.ZodObject<infer Shape> ? Shape : T extends z.ZodRawShape ? T : never;

/**
 * The output type of an object shape. An empty shape gives the empty object type:
 * zod types an empty object's output as `Record<string, never>`, which no value
 * with fields (a config, a creds `type`) satisfies once intersected.
 */
type ShapeOutput<TShape extends z.ZodRawShape> = keyof TShape extends never
  ? Record<never, never>
  : z.output<z.ZodObject<TShape>>;

/** The creds union: one object per creds type, discriminated by `type`. */
export type CredsOf<TCreds extends CredsShapes> = {
  [K in keyof TCreds & string]: { type: K } & ShapeOutput<ShapeOf<TCreds[K]>>;
}[keyof TCreds & string];

export interface BackendConfigModels<
  TType extends string,
  TConfig extends object,
  TCreds extends object,
  TStoredExtra extends object,
> {
  readonly type: TType;
  /** The creds union, discriminated by `type` (`XCreds`); strict. */
  readonly creds: z.ZodType<TCreds>;
  /** `XBackendConfig`: the user's fields, no creds; strict. */
  readonly backendConfig: z.ZodType<{ type: TType } & TConfig>;
  /** `XBackendConfigWithCreds`: adds `creds`; strict. What users send and `validateConfig` receives. */
  readonly backendConfigWithCreds: z.ZodType<{ type: TType } & TConfig & { creds: TCreds }>;
  /** `XStoredConfig`: what the database keeps, without creds. Unknown keys are dropped, not rejected. */
  readonly storedConfig: z.ZodType<{ type: TType } & TConfig & TStoredExtra>;
  /** `XConfig`: stored config plus creds; what the Compute is built from. */
  readonly config: z.ZodType<{ type: TType } & TConfig & TStoredExtra & { creds: TCreds }>;

  /** Splits a config with creds into the config without creds and the creds. */
  splitCreds(configWithCreds: { type: TType } & TConfig & { creds: TCreds }): {
    config: { type: TType } & TConfig;
    auth: TCreds;
  };
  /** Joins a stored config and its creds into the `XConfig` the Compute uses (validated). */
  joinCreds(
    stored: { type: TType } & TConfig & TStoredExtra,
    auth: TCreds,
  ): { type: TType } & TConfig & TStoredExtra & { creds: TCreds };
  /** The `BackendRecord` for a stored config and creds (both validated). */
  toRecord(stored: { type: TType } & TConfig & TStoredExtra, auth: TCreds): BackendRecord;
  /** `XConfig` from a record. */
  configFromRecord(record: BackendRecord): { type: TType } & TConfig & TStoredExtra & { creds: TCreds };
  /** `XBackendConfigWithCreds` from a record (stored-only fields dropped). */
  configWithCredsFromRecord(record: BackendRecord): { type: TType } & TConfig & { creds: TCreds };
  /** `XBackendConfig` from a record (stored-only fields dropped). */
  configWithoutCredsFromRecord(record: BackendRecord): { type: TType } & TConfig;
}

export interface DefineBackendConfigModelsOptions<
  TType extends string,
  TConfigShape extends z.ZodRawShape,
  TCreds extends CredsShapes,
  TStoredShape extends z.ZodRawShape,
> {
  /** The backend type, the `type` literal of every config. */
  type: TType;
  /** User-visible config fields (without `type` and `creds`), e.g. `{ regions: z.array(z.string()).nullish() }`. */
  configFields: TConfigShape;
  /**
   * One entry per creds type, keyed by its `type` value: the fields besides
   * `type`, as a shape or a `z.object`. E.g.
   * `{ access_key: { access_key: z.string(), secret_key: z.string() }, default: {} }`.
   */
  credsSchemas: TCreds;
  /** Fields only the stored config has (filled by `createBackend`). */
  storedExtra?: TStoredShape;
}

function shapeOf(value: z.ZodRawShape | z.ZodObject): z.ZodRawShape {
  // Duck-typed: the schema may come from another copy of zod than ours.
  return '_zod' in value && 'shape' in value ? (value as z.ZodObject).shape : (value as z.ZodRawShape);
}

function parseJsonObject(text: string, what: string): Record<string, unknown> {
  const value: unknown = JSON.parse(text);
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    throw new BackendPluginError(`The stored backend ${what} is not a JSON object`);
  }
  return value as Record<string, unknown>;
}

/**
 * Builds dstack's chain of config models for a backend:
 * `XBackendConfig` → `XBackendConfigWithCreds` → `XStoredConfig` → `XConfig`,
 * plus the helpers configurators need to move between them and `BackendRecord`.
 *
 * User-facing schemas (`backendConfig`, `backendConfigWithCreds`, `creds`) are
 * strict: an unknown field is an error, as in dstack. Stored schemas drop
 * unknown fields instead, so a record written by another version still loads.
 */
export function defineBackendConfigModels<
  const TType extends string,
  TConfigShape extends z.ZodRawShape,
  TCreds extends CredsShapes,
  TStoredShape extends z.ZodRawShape = Record<never, never>,
>(
  options: DefineBackendConfigModelsOptions<TType, TConfigShape, TCreds, TStoredShape>,
): BackendConfigModels<
  TType,
  z.output<z.ZodObject<TConfigShape>>,
  CredsOf<TCreds>,
  ShapeOutput<TStoredShape>
> {
  const { type, configFields } = options;
  for (const reserved of ['type', 'creds']) {
    if (reserved in configFields || (options.storedExtra && reserved in options.storedExtra)) {
      throw new BackendPluginError(`Backend "${type}": config fields must not include "${reserved}"`);
    }
  }
  const credsEntries = Object.entries(options.credsSchemas);
  if (credsEntries.length === 0) {
    throw new BackendPluginError(`Backend "${type}": at least one creds type is required`);
  }
  const credsVariant = (credsType: string, shape: z.ZodRawShape, strict: boolean) => {
    const full = { ...shape, type: z.literal(credsType) };
    return strict ? z.strictObject(full) : z.object(full);
  };
  const credsUnion = (strict: boolean) => {
    const variants = credsEntries.map(([credsType, value]) =>
      credsVariant(credsType, shapeOf(value), strict),
    );
    return z.discriminatedUnion('type', variants as unknown as [z.ZodObject, ...z.ZodObject[]]);
  };
  const creds = credsUnion(true);
  const storedCreds = credsUnion(false);

  const baseShape = { type: z.literal(type), ...configFields };
  const storedShape = { ...baseShape, ...(options.storedExtra ?? {}) };
  const backendConfig = z.strictObject(baseShape);
  const backendConfigLenient = z.object(baseShape);
  const backendConfigWithCreds = z.strictObject({ ...baseShape, creds });
  const storedConfig = z.object(storedShape);
  const config = z.object({ ...storedShape, creds: storedCreds });

  const models = {
    type,
    creds,
    backendConfig,
    backendConfigWithCreds,
    storedConfig,
    config,
    splitCreds(configWithCreds: Record<string, unknown>) {
      const { creds: auth, ...rest } = configWithCreds;
      return { config: rest, auth };
    },
    joinCreds(stored: Record<string, unknown>, auth: unknown) {
      return config.parse({ ...stored, creds: auth });
    },
    toRecord(stored: Record<string, unknown>, auth: unknown): BackendRecord {
      return {
        config: JSON.stringify(storedConfig.parse(stored)),
        auth: JSON.stringify(storedCreds.parse(auth)),
      };
    },
    configFromRecord(record: BackendRecord) {
      return config.parse({
        ...parseJsonObject(record.config, 'config'),
        creds: parseJsonObject(record.auth, 'auth'),
      });
    },
    configWithCredsFromRecord(record: BackendRecord) {
      const withoutCreds = backendConfigLenient.parse(parseJsonObject(record.config, 'config'));
      return { ...withoutCreds, creds: storedCreds.parse(parseJsonObject(record.auth, 'auth')) };
    },
    configWithoutCredsFromRecord(record: BackendRecord) {
      return backendConfigLenient.parse(parseJsonObject(record.config, 'config'));
    },
  };
  // The runtime shapes are built from the same inputs as the declared types;
  // zod cannot express a discriminated union over a mapped record statically.
  return models as unknown as BackendConfigModels<
    TType,
    z.output<z.ZodObject<TConfigShape>>,
    CredsOf<TCreds>,
    ShapeOutput<TStoredShape>
  >;
}
