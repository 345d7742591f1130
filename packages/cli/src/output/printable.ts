/**
 * The one sanitizer for text the CLI did not write itself (names, statuses and messages from
 * the server) before it reaches a terminal. A name holding `\x1b[2J`, a carriage return or a
 * bidirectional override could otherwise clear the screen, overwrite a line or make the output
 * lie; here every such character becomes a visible escape (`\x1b[2J`, `\r`, `\u202e`).
 * Job logs are not passed through it: they are the job's own output, printed as they are.
 */

/**
 * C0 controls (tab and newline included: a cell or a status is one line), DEL, C1 controls
 * (`\x9b` starts an escape sequence on some terminals), the line and paragraph separators, and
 * the bidirectional marks, embeddings, overrides and isolates.
 */
// biome-ignore lint/suspicious/noControlCharactersInRegex: matching control characters is the point
const UNPRINTABLE = /[\u0000-\u001f\u007f-\u009f\u200e\u200f\u2028\u2029\u202a-\u202e\u2066-\u2069]/g;

/** The part of `UNPRINTABLE` that `JSON.stringify` leaves raw in strings (it escapes C0 itself). */
const RAW_IN_JSON = /[\u007f-\u009f\u200e\u200f\u2028\u2029\u202a-\u202e\u2066-\u2069]/g;

const SHORT_ESCAPES: Readonly<Record<string, string>> = { '\n': '\\n', '\r': '\\r', '\t': '\\t' };

function escapeCharacter(character: string): string {
  const short = SHORT_ESCAPES[character];
  if (short) return short;
  const code = character.charCodeAt(0);
  return code <= 0xff
    ? `\\x${code.toString(16).padStart(2, '0')}`
    : `\\u${code.toString(16).padStart(4, '0')}`;
}

/** `text` with control characters (and so ANSI escape sequences) shown as visible escapes. */
export function printable(text: string): string {
  return text.replace(UNPRINTABLE, escapeCharacter);
}

/**
 * `JSON.stringify(value, null, 2)` that a terminal shows as it is: JSON already escapes C0
 * controls, and the characters it leaves raw (DEL, C1, separators, bidi) become `\uXXXX`,
 * which parses back to the same value.
 */
export function formatJson(value: unknown): string {
  return JSON.stringify(value, null, 2).replace(
    RAW_IN_JSON,
    (character) => `\\u${character.charCodeAt(0).toString(16).padStart(4, '0')}`,
  );
}
