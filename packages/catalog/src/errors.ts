const CATALOG_ERROR_MARKER = Symbol.for('@dstack/catalog.CatalogError');

/**
 * A catalog could not be loaded or queried (gpuhunt's `GPUHuntError`). Recognise it across
 * package copies with {@link CatalogError.isInstance}, not `instanceof`.
 */
export class CatalogError extends Error {
  readonly [CATALOG_ERROR_MARKER] = true;
  override readonly name: string = 'CatalogError';

  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
  }

  static isInstance(error: unknown): error is CatalogError {
    return typeof error === 'object' && error !== null && CATALOG_ERROR_MARKER in error;
  }
}

/** Message of an unknown thrown value, with its cause when there is one. */
export function describeError(error: unknown): string {
  if (!(error instanceof Error)) return String(error);
  const cause = error.cause instanceof Error ? `: ${error.cause.message}` : '';
  return `${error.message}${cause}`;
}
