/**
 * The one way user YAML (`.dstack.yml`, profiles, the server's `config.yml`) is read: a size
 * limit checked before parsing, aliases bounded so that an alias bomb ("billion laughs") cannot
 * exhaust memory, and every failure a `ConfigurationError` at a line and column.
 */
import {
  type Document,
  isAlias,
  isCollection,
  isPair,
  LineCounter,
  type Node,
  parseDocument,
  visit,
} from 'yaml';
import { ConfigurationError } from '../errors.js';

/** The largest YAML text accepted, in bytes (1 MiB): a configuration is a few kilobytes. */
export const MAX_YAML_BYTES = 1024 * 1024;

/**
 * The yaml package's budget for alias expansions (its own default, stated here because the
 * guard depends on it): an anchor's node count times its uses may not exceed it.
 */
export const MAX_YAML_ALIAS_COUNT = 100;

export interface YamlTextOptions {
  /** The file the text came from; named in errors. */
  file?: string | undefined;
}

export interface ParsedYamlText {
  document: Document;
  lineCounter: LineCounter;
  /** The document as plain JavaScript values (aliases resolved). */
  data: unknown;
}

function formatSize(bytes: number): string {
  if (bytes >= 1024 * 1024) return `${Number((bytes / (1024 * 1024)).toFixed(1))} MiB`;
  return `${Math.ceil(bytes / 1024)} KiB`;
}

function utf8Length(text: string): number {
  // Any text longer than the limit in UTF-16 units is also longer in bytes: skip encoding it.
  if (text.length > MAX_YAML_BYTES) return text.length;
  return new TextEncoder().encode(text).length;
}

/**
 * The alias that expands to the most nodes, where an alias bomb shows itself; counted with a
 * memo per node, so the count itself costs one pass over the document.
 */
function largestAlias(document: Document): Node | undefined {
  const sizes = new Map<unknown, number>();
  const sizeOf = (node: unknown): number => {
    if (isAlias(node)) return sizeOf(node.resolve(document));
    if (!isCollection(node) && !isPair(node)) return 1;
    const known = sizes.get(node);
    if (known !== undefined) return known;
    // An alias to an enclosing anchor (a cycle) counts once.
    sizes.set(node, 1);
    const size = isPair(node)
      ? sizeOf(node.key) + sizeOf(node.value)
      : node.items.reduce<number>((total, item) => total + sizeOf(item), 1);
    sizes.set(node, size);
    return size;
  };
  let largest: { node: Node; size: number } | undefined;
  visit(document, {
    Alias(_key, node) {
      const size = sizeOf(node);
      if (!largest || size > largest.size) largest = { node, size };
    },
  });
  return largest?.node;
}

function errorAt(
  message: string,
  file: string | undefined,
  lineCounter: LineCounter,
  offset: number | undefined,
  cause?: unknown,
): ConfigurationError {
  const { line, col } = lineCounter.linePos(offset ?? 0);
  return new ConfigurationError(message, {
    ...(file === undefined ? {} : { file }),
    line: Math.max(line, 1),
    column: Math.max(col, 1),
    cause,
  });
}

/** yaml's message without its own position suffix and code excerpt (we print the position). */
function firstLine(message: string): string {
  return message.split('\n')[0]!.replace(/ at line \d+, column \d+:?$/, '');
}

/**
 * Throws the `ConfigurationError` of a YAML text of `bytes` bytes over `MAX_YAML_BYTES`; a
 * reader that knows a file's size checks it before reading the file.
 */
export function assertYamlSize(bytes: number, file?: string): void {
  if (bytes <= MAX_YAML_BYTES) return;
  throw new ConfigurationError(
    `the file is ${formatSize(bytes)}, over the ${formatSize(MAX_YAML_BYTES)} limit for YAML files`,
    file === undefined ? {} : { file },
  );
}

/**
 * Parses YAML text into a document (for positions) and plain data. Throws `ConfigurationError`
 * for text over `MAX_YAML_BYTES` (before parsing), for syntax errors and for aliases that
 * expand beyond `MAX_YAML_ALIAS_COUNT`, each at its line and column.
 */
export function parseYamlText(text: string, options: YamlTextOptions = {}): ParsedYamlText {
  const { file } = options;
  assertYamlSize(utf8Length(text), file);
  const lineCounter = new LineCounter();
  const document = parseDocument(text, { lineCounter, prettyErrors: false });
  const [error] = document.errors;
  if (error) {
    throw errorAt(`invalid YAML: ${firstLine(error.message)}`, file, lineCounter, error.pos[0], error);
  }
  let data: unknown;
  try {
    data = document.toJS({ maxAliasCount: MAX_YAML_ALIAS_COUNT });
  } catch (conversionError) {
    // yaml throws a plain ReferenceError for an alias bomb or an unresolvable alias.
    if (!(conversionError instanceof Error)) throw conversionError;
    const culprit = largestAlias(document);
    const name = culprit && isAlias(culprit) ? ` *${culprit.source}` : '';
    const message = /Excessive alias count/.test(conversionError.message)
      ? `invalid YAML: alias${name} expands the document too much (aliases may repeat content at most ${MAX_YAML_ALIAS_COUNT} times)`
      : `invalid YAML: ${firstLine(conversionError.message)}`;
    throw errorAt(message, file, lineCounter, culprit?.range?.[0], conversionError);
  }
  return { document, lineCounter, data };
}
