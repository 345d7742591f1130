/** ANSI styles, applied only when the target stream shows colors. */
export interface Colors {
  red: (text: string) => string;
  green: (text: string) => string;
  yellow: (text: string) => string;
  bold: (text: string) => string;
  dim: (text: string) => string;
}

function style(open: number, close: number, enabled: boolean): (text: string) => string {
  return enabled ? (text) => `\u001b[${open}m${text}\u001b[${close}m` : (text) => text;
}

/** Styles that are the identity when `enabled` is false. */
export function createColors(enabled: boolean): Colors {
  return {
    red: style(31, 39, enabled),
    green: style(32, 39, enabled),
    yellow: style(33, 39, enabled),
    bold: style(1, 22, enabled),
    dim: style(2, 22, enabled),
  };
}

export function red(text: string, enabled: boolean): string {
  return createColors(enabled).red(text);
}

/** Colors only on a TTY, and never when `NO_COLOR` is set (https://no-color.org). */
export function streamShowsColors(stream: { isTTY?: boolean }, environment = process.env): boolean {
  return Boolean(stream.isTTY) && !environment.NO_COLOR;
}

// biome-ignore lint/suspicious/noControlCharactersInRegex: matching ANSI escape sequences is the point
const ANSI_PATTERN = /\u001b\[[0-9;]*m/g;

/** The text without ANSI styles, for measuring what the terminal shows. */
export function stripAnsi(text: string): string {
  return text.replace(ANSI_PATTERN, '');
}
