/**
 * Turns validation issues into one `ConfigurationError` in the user's words, with the file,
 * line, column and field path of the first problem in document order.
 */
import type { Document, LineCounter } from 'yaml';
import type { z } from 'zod';
import { ConfigurationError } from '../errors.js';
import { describeValue, formatFieldPath, SUGGESTION_SEPARATOR } from './schema-helpers.js';
import { locateInDocument } from './yaml-positions.js';

type Issue = z.core.$ZodIssue;

/** Where the configuration came from, for locating issues. */
export interface IssueSource {
  file?: string | undefined;
  document?: Document | undefined;
  lineCounter?: LineCounter | undefined;
  /** What the root object is, for messages: "task configuration". */
  rootLabel: string;
}

const TYPE_WORDS: Record<string, string> = {
  object: 'a mapping',
  record: 'a mapping',
  array: 'a list',
  tuple: 'a list',
  string: 'a string',
  number: 'a number',
  int: 'a whole number',
  boolean: 'true or false',
  null: 'an empty value',
};

function quote(value: unknown): string {
  return typeof value === 'string' ? value : JSON.stringify(value);
}

function sizeMessage(issue: Issue & { code: 'too_small' | 'too_big' }): string {
  const small = issue.code === 'too_small';
  const limit = small
    ? (issue as { minimum: number | bigint }).minimum
    : (issue as { maximum: number | bigint }).maximum;
  const inclusive = issue.inclusive !== false;
  switch (issue.origin) {
    case 'array':
    case 'set':
      return small
        ? Number(limit) === 1
          ? 'must not be empty'
          : `must have at least ${limit} items`
        : `must have at most ${limit} item${Number(limit) === 1 ? '' : 's'}`;
    case 'string':
      return small
        ? Number(limit) === 1
          ? 'must not be empty'
          : `must be at least ${limit} characters long`
        : `must be at most ${limit} characters long`;
    default:
      if (small) return inclusive ? `must be at least ${limit}` : `must be greater than ${limit}`;
      return inclusive ? `must be at most ${limit}` : `must be less than ${limit}`;
  }
}

/** zod's built-in wording, which we replace; messages set by our schemas are kept. */
const ZOD_DEFAULT_MESSAGE =
  /^(Invalid (input|option|key|element|discriminator)|Too (small|big)|Unrecognized key)/;

/** The human message of one issue (without location or path). */
export function describeIssue(issue: Issue, where: string, field?: string | number): string {
  if (issue.code === 'invalid_type' && issue.input === undefined && typeof field === 'string') {
    return `required field '${field}' is missing`;
  }
  if (issue.code !== 'unrecognized_keys' && issue.message && !ZOD_DEFAULT_MESSAGE.test(issue.message)) {
    return issue.message;
  }
  switch (issue.code) {
    case 'invalid_type': {
      const expected = TYPE_WORDS[issue.expected] ?? issue.expected;
      return `expected ${expected}, got ${describeValue(issue.input)}`;
    }
    case 'invalid_value': {
      const values = issue.values.map(quote);
      const got = describeValue(issue.input);
      return values.length === 1
        ? `expected ${values[0]}, got ${got}`
        : `expected one of ${values.join(', ')}; got ${got}`;
    }
    case 'too_small':
    case 'too_big':
      return sizeMessage(issue);
    case 'unrecognized_keys': {
      const key = issue.keys[0] ?? '';
      const suggestionAt = issue.message.indexOf(SUGGESTION_SEPARATOR);
      const suggestion = suggestionAt === -1 ? '' : issue.message.slice(suggestionAt);
      return `unknown field '${key}' in ${where}${suggestion}`;
    }
    case 'invalid_key':
      return issue.issues[0]?.message ?? issue.message;
    case 'invalid_union':
      if ('note' in issue && issue.note === 'No matching discriminator') {
        return `expected one of ${(issue as { options?: unknown[] }).options?.map(quote).join(', ') ?? ''}`;
      }
      return issue.message;
    default:
      return issue.message;
  }
}

function normalisePath(path: ReadonlyArray<PropertyKey>): Array<string | number> {
  return path.map((segment) => (typeof segment === 'number' ? segment : String(segment)));
}

/**
 * Whether an issue is about a field the user did not write: a required field, or a rule on a
 * field that is absent ("either 'commands' or 'image' is required").
 */
function isMissingField(issue: Issue, source: IssueSource): boolean {
  if (issue.code === 'invalid_type' && issue.input === undefined) return true;
  if (issue.path.length === 0 || !source.document) return false;
  const path = normalisePath(issue.path);
  const parent = path.slice(0, -1);
  return (parent.length === 0 || source.document.hasIn(parent)) && !source.document.hasIn(path);
}

/** The field an unknown-field message suggests ("did you mean 'port'?"), if any. */
function suggestedField(issue: Issue): string | undefined {
  if (issue.code !== 'unrecognized_keys') return undefined;
  return /; did you mean '([^']+)'\?/.exec(issue.message)?.[1];
}

/** A path as one string, to look issues up by where they are (segments compared as strings). */
function pathKey(path: ReadonlyArray<PropertyKey>): string {
  return JSON.stringify(path.map(String));
}

/**
 * The first unknown-field issue of each mapping, by its path: one lookup per missing field
 * (a search of the list for each would be quadratic in a body of many small mistakes).
 */
function firstUnknownFieldByPath(issues: readonly Issue[]): Map<string, Issue> {
  const byPath = new Map<string, Issue>();
  for (const issue of issues) {
    if (issue.code !== 'unrecognized_keys') continue;
    const key = pathKey(issue.path);
    if (!byPath.has(key)) byPath.set(key, issue);
  }
  return byPath;
}

/**
 * Converts validation issues to the `ConfigurationError` of the first one in document order,
 * except that a misspelled field comes before the required field it left missing (`prot:`
 * for `port:`): the typo is what the user must fix, at its own line.
 */
export function issuesToConfigurationError(
  issues: readonly Issue[],
  source: IssueSource,
  cause?: unknown,
): ConfigurationError {
  const unknownFields = firstUnknownFieldByPath(issues);
  const located = issues.map((issue, order) => {
    let path = normalisePath(issue.path);
    const isUnknownKey = issue.code === 'unrecognized_keys';
    const where = path.length === 0 ? `the ${source.rootLabel}` : formatFieldPath(path);
    if (isUnknownKey && issue.keys[0] !== undefined) path = [...path, issue.keys[0]];
    let line: number | undefined;
    let column: number | undefined;
    if (source.document && source.lineCounter) {
      const location = locateInDocument(source.document, source.lineCounter, path, {
        pointAtKey: isUnknownKey,
      });
      ({ line, column } = location);
      path = location.path;
    }
    const field = normalisePath(issue.path).at(-1);
    // An unknown field in the same mapping probably is the missing one, misspelled.
    const explainedBy =
      !isUnknownKey && isMissingField(issue, source)
        ? unknownFields.get(pathKey(issue.path.slice(0, -1)))
        : undefined;
    return {
      issue,
      order,
      path,
      line,
      column,
      field,
      explainedBy,
      message: describeIssue(issue, where, field),
    };
  });
  located.sort(
    (a, b) =>
      Number(a.explainedBy !== undefined) - Number(b.explainedBy !== undefined) ||
      (a.line ?? 0) - (b.line ?? 0) ||
      (a.column ?? 0) - (b.column ?? 0) ||
      a.order - b.order,
  );
  const first = located[0];
  if (!first) return new ConfigurationError('invalid configuration', { file: source.file, cause });
  let message = first.message;
  // Name a missing field the suggestion does not already name ("unknown field 'cmd'" alone
  // would hide that 'commands' is required).
  const missing = located.find(
    (entry) => entry.explainedBy === first.issue && entry.field !== suggestedField(first.issue),
  );
  if (missing) message += ` (and ${missing.message})`;
  return new ConfigurationError(message, {
    ...(source.file === undefined ? {} : { file: source.file }),
    path: first.path,
    ...(first.line === undefined ? {} : { line: first.line, column: first.column! }),
    cause,
  });
}

/**
 * `file:line:column: field.path: message`, the way the CLI prints configuration errors; parts
 * that are unknown are left out.
 */
export function formatConfigurationError(error: ConfigurationError): string {
  let location = error.file ?? '';
  if (error.line !== undefined) {
    location += `${location ? ':' : ''}${error.line}`;
    if (error.column !== undefined) location += `:${error.column}`;
  }
  const fieldPath = formatFieldPath(error.path);
  return [location, fieldPath, error.message].filter((part) => part !== '').join(': ');
}
