/**
 * Error classes shared by every dstack package.
 *
 * Packages may load different copies of this module (a backend built against an
 * older core), so identity checks use a `Symbol.for` marker and `isInstance`,
 * never `instanceof` across packages.
 */

const DSTACK_ERROR_MARKER = Symbol.for('@dstack/core/DstackError');

export class DstackError extends Error {
  readonly [DSTACK_ERROR_MARKER] = true;
  override readonly name: string = 'DstackError';

  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
  }

  static isInstance(error: unknown): error is DstackError {
    return typeof error === 'object' && error !== null && DSTACK_ERROR_MARKER in error;
  }
}

/** Defines `isInstance` for a subclass from its stable `name`. */
function hasName(error: unknown, name: string): boolean {
  return DstackError.isInstance(error) && error.name === name;
}

/** A user-written configuration (YAML file, API body) is invalid. */
export class ConfigurationError extends DstackError {
  override readonly name = 'ConfigurationError';
  /** The file the configuration came from, when known. */
  readonly file: string | undefined;
  /** The field path, e.g. `['resources', 'gpu']`. Empty for file-level errors. */
  readonly path: ReadonlyArray<string | number>;
  /** 1-based line and column of the offending value, when known. */
  readonly line: number | undefined;
  readonly column: number | undefined;

  constructor(
    message: string,
    details: {
      file?: string;
      path?: ReadonlyArray<string | number>;
      line?: number;
      column?: number;
      cause?: unknown;
    } = {},
  ) {
    super(message, { cause: details.cause });
    this.file = details.file;
    this.path = details.path ?? [];
    this.line = details.line;
    this.column = details.column;
  }

  static override isInstance(error: unknown): error is ConfigurationError {
    return hasName(error, 'ConfigurationError');
  }
}

export { hasName as isDstackErrorNamed };
