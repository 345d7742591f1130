/** The message of anything thrown, for a status message or a log line. */
export function errorMessage(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}
