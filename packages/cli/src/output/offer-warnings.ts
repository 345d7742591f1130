import type { CliIo } from '../io.js';
import { printable } from './printable.js';

/**
 * The server's warnings about offers missing from a plan or an offers list (a backend that failed
 * or answered after the server's deadline), one `Warning:` line each on stderr, so that the table
 * on stdout stays machine-readable.
 */
export function printOfferWarnings(io: CliIo, warnings: readonly string[]): void {
  for (const warning of warnings) io.stderr(`Warning: ${printable(warning)}\n`);
}
