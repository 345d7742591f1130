/**
 * Field paths → positions in a YAML document, for `config.yml:line:column`
 * errors, in the server's words. Positions come from @dstack/core's `locateInDocument`.
 */
import { ConfigurationError, locateInDocument, parseYamlText } from '@dstack/core';
import type { Document, LineCounter } from 'yaml';
import type { z } from 'zod';

export interface ParsedYamlFile {
  file: string;
  document: Document;
  lineCounter: LineCounter;
  /** The document as plain values. */
  data: unknown;
}

/**
 * Parses YAML text with @dstack/core's limits (size, aliases); a syntax error becomes a
 * ConfigurationError at its position.
 */
export function parseYamlFile(text: string, file: string): ParsedYamlFile {
  return { file, ...parseYamlText(text, { file }) };
}

/** 1-based position of the deepest node of `path` that exists (the key itself with `pointAtKey`). */
function locatePath(
  parsed: ParsedYamlFile,
  path: ReadonlyArray<string | number>,
  options: { pointAtKey?: boolean } = {},
): { line: number; column: number } {
  const { line, column } = locateInDocument(parsed.document, parsed.lineCounter, path, options);
  return { line, column };
}

/** A ConfigurationError for `path` of the file, positioned when the path exists. */
export function errorAtPath(
  parsed: ParsedYamlFile,
  path: ReadonlyArray<string | number>,
  message: string,
  options: { pointAtKey?: boolean; cause?: unknown } = {},
): ConfigurationError {
  return new ConfigurationError(message, {
    file: parsed.file,
    path,
    ...locatePath(parsed, path, options),
    cause: options.cause,
  });
}

function describeReceived(value: unknown): string {
  if (value === undefined) return 'nothing';
  if (value === null) return 'an empty value';
  if (Array.isArray(value)) return 'a list';
  if (typeof value === 'object') return 'a mapping';
  return JSON.stringify(value);
}

/** The message of one zod issue, in configuration-file words. */
export function describeZodIssue(issue: z.core.$ZodIssue): string {
  switch (issue.code) {
    case 'unrecognized_keys':
      return `unknown field '${issue.keys[0] ?? ''}'`;
    case 'invalid_type':
      if ('input' in issue ? issue.input === undefined : /received undefined$/.test(issue.message)) {
        return 'required field is missing';
      }
      return `expected ${issue.expected}, got ${describeReceived(issue.input)}`;
    case 'invalid_value':
      return `expected one of ${issue.values.map((value) => JSON.stringify(value)).join(', ')}; got ${describeReceived(issue.input)}`;
    default:
      return issue.message;
  }
}

/** The ConfigurationError of the first issue in document order; `prefix` is prepended to issue paths. */
export function zodIssuesToConfigurationError(
  parsed: ParsedYamlFile,
  issues: readonly z.core.$ZodIssue[],
  prefix: ReadonlyArray<string | number> = [],
  cause?: unknown,
): ConfigurationError {
  const located = issues.map((issue) => {
    let path = [
      ...prefix,
      ...issue.path.map((segment) => (typeof segment === 'number' ? segment : String(segment))),
    ];
    const pointAtKey = issue.code === 'unrecognized_keys';
    if (pointAtKey && issue.keys[0] !== undefined) path = [...path, issue.keys[0]];
    return {
      path,
      pointAtKey,
      message: describeZodIssue(issue),
      ...locatePath(parsed, path, { pointAtKey }),
    };
  });
  located.sort((a, b) => a.line - b.line || a.column - b.column);
  const first = located[0];
  if (!first) return new ConfigurationError('invalid configuration', { file: parsed.file, cause });
  return new ConfigurationError(first.message, {
    file: parsed.file,
    path: first.path,
    line: first.line,
    column: first.column,
    cause,
  });
}
