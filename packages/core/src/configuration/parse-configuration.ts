/**
 * Entry points: YAML text → typed configuration with defaults, or a `ConfigurationError` that
 * names the file, line, column and field path.
 */
import { type Document, isMap, isSeq } from 'yaml';
import * as z from 'zod';
import { ConfigurationError } from '../errors.js';
import { issuesToConfigurationError } from './configuration-error.js';
import { fleetConfigurationSchema } from './fleet-configuration.js';
import { gatewayConfigurationSchema } from './gateway-configuration.js';
import { type ProfilesFile, profilesFileSchema } from './profile.js';
import { devEnvironmentConfigurationSchema, taskConfigurationSchema } from './run-configurations.js';
import { closestName, describeValue, isPlainObject } from './schema-helpers.js';
import { serviceConfigurationSchema } from './service-configuration.js';
import { volumeConfigurationSchema } from './volume-configuration.js';
import { locateInDocument } from './yaml-positions.js';
import { parseYamlText } from './yaml-text.js';

/** Schemas by `type`, in the order dstack lists them. */
export const CONFIGURATION_SCHEMAS = {
  task: taskConfigurationSchema,
  service: serviceConfigurationSchema,
  'dev-environment': devEnvironmentConfigurationSchema,
  fleet: fleetConfigurationSchema,
  volume: volumeConfigurationSchema,
  gateway: gatewayConfigurationSchema,
} as const;
export type ConfigurationType = keyof typeof CONFIGURATION_SCHEMAS;
export const CONFIGURATION_TYPES = Object.keys(CONFIGURATION_SCHEMAS) as ConfigurationType[];

/**
 * How a file's text is checked: once, so without zod's JIT, which compiles a parser for each object
 * schema on its first parse (`new Function`) and pays for it only over many parses (the CLI reads
 * one file per command).
 */
const PARSE_FILE_ONCE = { reportInput: true, jitless: true } as const;

/** Any configuration a user can apply, chosen by `type`; also validates API bodies. */
export const anyConfigurationSchema = z.discriminatedUnion('type', [
  taskConfigurationSchema,
  serviceConfigurationSchema,
  devEnvironmentConfigurationSchema,
  fleetConfigurationSchema,
  volumeConfigurationSchema,
  gatewayConfigurationSchema,
]);
export type AnyConfiguration = z.infer<typeof anyConfigurationSchema>;

export interface ParseOptions {
  /** The file the text came from; named in errors. */
  path?: string;
}

function rootKind(document: Document, data: unknown): string {
  if (isSeq(document.contents)) return 'a list';
  return describeValue(data);
}

const TYPE_LIST = CONFIGURATION_TYPES.join(', ');

/**
 * Parses a dstack configuration file (`.dstack.yml`) into a typed configuration with defaults
 * applied. Throws `ConfigurationError` (with file, line, column and field path) when the YAML
 * is malformed or the configuration is invalid.
 */
export function parseConfiguration(text: string, options: ParseOptions = {}): AnyConfiguration {
  const file = options.path;
  const { document, lineCounter, data } = parseYamlText(text, { file });
  const fileDetails = file === undefined ? {} : { file };
  if (document.contents === null || (document.contents as { value?: unknown }).value === null) {
    throw new ConfigurationError(
      `the configuration is empty; expected a mapping with 'type' (one of ${TYPE_LIST})`,
      {
        ...fileDetails,
        line: 1,
        column: 1,
      },
    );
  }
  if (!isMap(document.contents)) {
    const { line, column } = locateInDocument(document, lineCounter, []);
    throw new ConfigurationError(`expected a mapping at the top level, got ${rootKind(document, data)}`, {
      ...fileDetails,
      line,
      column,
    });
  }
  const type = isPlainObject(data) ? data.type : undefined;
  if (type === undefined || type === null) {
    const { line, column } = locateInDocument(document, lineCounter, []);
    throw new ConfigurationError(`missing field 'type': expected one of ${TYPE_LIST}`, {
      ...fileDetails,
      path: ['type'],
      line,
      column,
    });
  }
  if (typeof type !== 'string' || !(type in CONFIGURATION_SCHEMAS)) {
    const { line, column } = locateInDocument(document, lineCounter, ['type']);
    const suggestion = typeof type === 'string' ? closestName(type, CONFIGURATION_TYPES) : undefined;
    throw new ConfigurationError(
      `unknown configuration type ${describeValue(type)}: expected one of ${TYPE_LIST}${suggestion ? `; did you mean '${suggestion}'?` : ''}`,
      { ...fileDetails, path: ['type'], line, column },
    );
  }
  const schema = CONFIGURATION_SCHEMAS[type as ConfigurationType];
  const result = schema.safeParse(data, PARSE_FILE_ONCE);
  if (!result.success) {
    throw issuesToConfigurationError(
      result.error.issues,
      {
        file,
        document,
        lineCounter,
        rootLabel: `${type} configuration`,
      },
      result.error,
    );
  }
  return result.data as AnyConfiguration;
}

/**
 * Validates an already-parsed configuration (an API body, a JSON object). Errors carry the
 * field path but no position.
 */
export function validateConfiguration(value: unknown): AnyConfiguration {
  const result = anyConfigurationSchema.safeParse(value, { reportInput: true });
  if (!result.success) {
    throw issuesToConfigurationError(result.error.issues, { rootLabel: 'configuration' }, result.error);
  }
  return result.data;
}

/**
 * Validates a configuration that must be of one of `types` (a request body's), errors positioned
 * at `path` inside the body: a configuration of another type is refused naming `type`.
 */
export function validateConfigurationOfType<Type extends AnyConfiguration['type']>(
  value: unknown,
  types: Type | readonly Type[],
  path: readonly string[],
): Extract<AnyConfiguration, { type: Type }> {
  let validated: AnyConfiguration;
  try {
    validated = validateConfiguration(value);
  } catch (error) {
    if (ConfigurationError.isInstance(error)) {
      throw new ConfigurationError(error.message, { path: [...path, ...error.path] });
    }
    throw error;
  }
  const expected: readonly AnyConfiguration['type'][] = typeof types === 'string' ? [types] : types;
  if (!expected.includes(validated.type)) {
    throw new ConfigurationError(
      `expected a ${listOfAlternatives(expected)} configuration, got ${validated.type}`,
      {
        path: [...path, 'type'],
      },
    );
  }
  return validated as Extract<AnyConfiguration, { type: Type }>;
}

/** `a`, `a or b`, `a, b or c`. */
function listOfAlternatives(names: readonly string[]): string {
  return names.length < 2 ? names.join('') : `${names.slice(0, -1).join(', ')} or ${names.at(-1)}`;
}

/**
 * Parses `.dstack/profiles.yml` (`{profiles: [{name, default, ...profile params}]}`). An empty
 * file has no profiles.
 */
export function parseProfilesFile(text: string, options: ParseOptions = {}): ProfilesFile {
  const file = options.path;
  const { document, lineCounter, data } = parseYamlText(text, { file });
  if (document.contents === null || (document.contents as { value?: unknown }).value === null) {
    return { profiles: [] };
  }
  const result = profilesFileSchema.safeParse(data, PARSE_FILE_ONCE);
  if (!result.success) {
    throw issuesToConfigurationError(
      result.error.issues,
      { file, document, lineCounter, rootLabel: 'profiles file' },
      result.error,
    );
  }
  return result.data;
}
