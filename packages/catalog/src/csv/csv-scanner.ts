/**
 * A single-pass CSV tokenizer over a string, with the dialect of Python's `csv` module
 * (comma, `"` quoting with doubled quotes, CRLF, LF or CR line ends, newlines inside
 * quoted fields). Rows are produced one at a time into reused buffers: unquoted fields
 * are kept as ranges of the text, so numbers can be parsed without slicing strings.
 */

const COMMA = 0x2c;
const QUOTE = 0x22;
const LF = 0x0a;
const CR = 0x0d;

export class CsvScanner {
  /** 1-based line in the text where the current row starts. */
  line = 0;
  /** Number of fields in the current row. */
  count = 0;
  starts = new Int32Array(32);
  ends = new Int32Array(32);
  /** Decoded text of quoted fields; `undefined` for unquoted ones (read them from `starts`/`ends`). */
  quotedValues: (string | undefined)[] = [];

  private position = 0;
  private nextLine = 1;
  private nextQuote = -1;
  private nextCr = -1;

  constructor(readonly text: string) {
    // A UTF-8 byte order mark is not part of the first column's name.
    if (text.charCodeAt(0) === 0xfeff) this.position = 1;
  }

  /**
   * Reads the next row; returns false at the end of the text. Empty lines are skipped,
   * as Python's `csv.DictReader` does.
   */
  nextRow(): boolean {
    const text = this.text;
    const length = text.length;
    for (;;) {
      const position = this.position;
      if (position >= length) return false;
      this.line = this.nextLine;
      this.count = 0;
      // Next quote and CR are cached: searching again from every row would be quadratic.
      if (this.nextQuote < position) this.nextQuote = indexOrLength(text, '"', position);
      if (this.nextCr < position) this.nextCr = indexOrLength(text, '\r', position);
      const lineEnd = indexOrLength(text, '\n', position);
      const contentEnd = this.nextCr === lineEnd - 1 ? lineEnd - 1 : lineEnd;
      if (this.nextCr < contentEnd) {
        this.position = this.readRowSlowly(position);
      } else if (this.nextQuote < lineEnd) {
        // Split the fields before the first quote fast, read the rest character by character.
        this.position = this.readRowSlowly(this.splitLine(position, this.nextQuote, true));
      } else {
        this.splitLine(position, contentEnd, false);
        this.position = lineEnd + 1;
        if (lineEnd < length) this.nextLine++;
      }
      if (this.count === 1 && this.quotedValues[0] === undefined && this.starts[0] === this.ends[0]) {
        continue;
      }
      return true;
    }
  }

  /**
   * Fast path: splits `[position, end)` at commas with the engine's indexOf. `end` is a line
   * end, or a quote (`endIsQuote`): then the field holding the quote is left for the slow
   * path, and its start is returned.
   */
  private splitLine(position: number, end: number, endIsQuote: boolean): number {
    const text = this.text;
    for (;;) {
      let comma = text.indexOf(',', position);
      if (comma === -1 || comma > end) comma = end;
      if (comma === end && endIsQuote) return position;
      if (this.count === this.starts.length) this.grow();
      const index = this.count++;
      this.starts[index] = position;
      this.ends[index] = comma;
      this.quotedValues[index] = undefined;
      if (comma === end) return end;
      position = comma + 1;
    }
  }

  /** General path, character by character: quoted fields, line breaks inside them, lone CRs. */
  private readRowSlowly(position: number): number {
    const text = this.text;
    const length = text.length;
    for (;;) {
      if (this.count === this.starts.length) this.grow();
      const index = this.count++;
      if (position < length && text.charCodeAt(position) === QUOTE) {
        position = this.readQuoted(position, index);
      } else {
        const start = position;
        while (position < length) {
          const code = text.charCodeAt(position);
          if (code === COMMA || code === LF || code === CR) break;
          position++;
        }
        this.starts[index] = start;
        this.ends[index] = position;
        this.quotedValues[index] = undefined;
      }
      // `position` is at a comma, a line end or the end of the text.
      if (position >= length) return position;
      const code = text.charCodeAt(position);
      if (code === COMMA) {
        position++;
      } else {
        this.nextLine++;
        return position + (code === CR && text.charCodeAt(position + 1) === LF ? 2 : 1);
      }
    }
  }

  /** The text of field `index` of the current row; '' past the end of a short row. */
  field(index: number): string {
    if (index >= this.count) return '';
    return this.quotedValues[index] ?? this.text.slice(this.starts[index], this.ends[index]);
  }

  /** Whether the current row has a field at `index` (a short row may not). */
  has(index: number): boolean {
    return index < this.count;
  }

  /** Whether field `index` exists and is empty. */
  isEmpty(index: number): boolean {
    if (index >= this.count) return true;
    const quoted = this.quotedValues[index];
    return quoted === undefined ? this.starts[index] === this.ends[index] : quoted.length === 0;
  }

  private readQuoted(position: number, index: number): number {
    const text = this.text;
    const length = text.length;
    let value = '';
    let chunkStart = position + 1;
    position++;
    for (;;) {
      if (position >= length) {
        // Unterminated quote: Python raises; we take the rest of the text as the field.
        value += text.slice(chunkStart, position);
        break;
      }
      const code = text.charCodeAt(position);
      if (code === QUOTE) {
        if (text.charCodeAt(position + 1) === QUOTE) {
          value += text.slice(chunkStart, position + 1);
          position += 2;
          chunkStart = position;
          continue;
        }
        value += text.slice(chunkStart, position);
        position++;
        // Python keeps text after the closing quote as part of the field (`"a"b` → `ab`).
        const restStart = position;
        while (position < length) {
          const next = text.charCodeAt(position);
          if (next === COMMA || next === LF || next === CR) break;
          position++;
        }
        value += text.slice(restStart, position);
        break;
      }
      if (code === LF || (code === CR && text.charCodeAt(position + 1) !== LF)) this.nextLine++;
      position++;
    }
    this.starts[index] = -1;
    this.ends[index] = -1;
    this.quotedValues[index] = value;
    return position;
  }

  private grow(): void {
    const starts = new Int32Array(this.starts.length * 2);
    starts.set(this.starts);
    const ends = new Int32Array(this.ends.length * 2);
    ends.set(this.ends);
    this.starts = starts;
    this.ends = ends;
  }
}

function indexOrLength(text: string, search: string, position: number): number {
  const index = text.indexOf(search, position);
  return index === -1 ? text.length : index;
}

const POWERS_OF_TEN = [
  1, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10, 1e11, 1e12, 1e13, 1e14, 1e15, 1e16, 1e17, 1e18, 1e19,
  1e20, 1e21, 1e22,
];

/**
 * Parses a decimal number in `text[start, end)`, allowing surrounding spaces as Python's
 * `float()` does; NaN when it is not a finite decimal number. Short plain decimals take an
 * exact fast path (mantissa < 2^53 divided by an exact power of ten rounds correctly).
 */
export function parseDecimal(text: string, start: number, end: number): number {
  while (start < end && isSpace(text.charCodeAt(start))) start++;
  while (end > start && isSpace(text.charCodeAt(end - 1))) end--;
  if (start === end) return Number.NaN;
  let position = start;
  let negative = false;
  const first = text.charCodeAt(position);
  if (first === 0x2d || first === 0x2b) {
    negative = first === 0x2d;
    position++;
  }
  let mantissa = 0;
  let digits = 0;
  let fractionDigits = 0;
  let seenPoint = false;
  for (; position < end; position++) {
    const code = text.charCodeAt(position);
    if (code >= 0x30 && code <= 0x39) {
      mantissa = mantissa * 10 + (code - 0x30);
      digits++;
      if (seenPoint) fractionDigits++;
    } else if (code === 0x2e && !seenPoint) {
      seenPoint = true;
    } else {
      break;
    }
  }
  if (position === end && digits > 0 && digits <= 15 && fractionDigits <= 22) {
    const value = mantissa / POWERS_OF_TEN[fractionDigits]!;
    return negative ? -value : value;
  }
  if (digits === 0 && position === end) return Number.NaN;
  // Exponents, long digit strings: validate the characters, then let the engine parse.
  for (let index = position; index < end; index++) {
    const code = text.charCodeAt(index);
    const allowed =
      (code >= 0x30 && code <= 0x39) ||
      code === 0x2e ||
      code === 0x65 ||
      code === 0x45 ||
      code === 0x2b ||
      code === 0x2d;
    if (!allowed) return Number.NaN;
  }
  const value = Number(text.slice(start, end));
  return Number.isFinite(value) ? value : Number.NaN;
}

/** Parses an integer in `text[start, end)` like Python's `int()`; NaN when it is not one. */
export function parseInteger(text: string, start: number, end: number): number {
  while (start < end && isSpace(text.charCodeAt(start))) start++;
  while (end > start && isSpace(text.charCodeAt(end - 1))) end--;
  let position = start;
  let negative = false;
  const first = text.charCodeAt(position);
  if (first === 0x2d || first === 0x2b) {
    negative = first === 0x2d;
    position++;
  }
  if (position >= end) return Number.NaN;
  let value = 0;
  for (; position < end; position++) {
    const code = text.charCodeAt(position);
    if (code < 0x30 || code > 0x39) return Number.NaN;
    value = value * 10 + (code - 0x30);
  }
  if (!Number.isSafeInteger(value)) return Number.NaN;
  return negative ? -value : value;
}

function isSpace(code: number): boolean {
  return code === 0x20 || code === 0x09 || code === LF || code === CR || code === 0x0b || code === 0x0c;
}
