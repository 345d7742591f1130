/**
 * The top-level `model` of a JSON object, found as the body's bytes arrive: the model endpoint
 * routes a request by it, and must not hold a body of up to 64 MiB to learn it (issue 28, H8).
 *
 * The scanner walks the bytes once and keeps only the field name or the `model` value it is
 * reading (a few bytes, bounded), never the rest. It follows the structure just enough to know
 * where the top-level fields are: strings with their escapes, nested objects and arrays by
 * depth, other values up to the next `,` or `}`. It does not validate what it skips (number
 * syntax, matching brackets inside a value, what follows `model`): the body goes on to the
 * replica untouched, and the replica's own parser answers for it.
 *
 * `model` may be anywhere in the object: OpenAI's Python client sends `messages` or `input`
 * first. A body with two `model` fields is routed by the first (JSON.parse would keep the
 * last); the replica, of the same project, sees the body as it was sent.
 */
import { ServerClientError } from '@dstack/core';
import { HttpError } from '../http/error-mapping.js';

/** The longest `model` value accepted, in bytes as sent: far above any model name. */
export const MODEL_NAME_MAX_BYTES = 4096;

/**
 * The longest field name worth reading as it is: `model` written with every character as a
 * `\uXXXX` escape is 30 bytes; a longer name is some other field.
 */
const FIELD_NAME_MAX_BYTES = 64;

const QUOTE = 0x22;
const BACKSLASH = 0x5c;
const OPEN_BRACE = 0x7b;
const CLOSE_BRACE = 0x7d;
const OPEN_BRACKET = 0x5b;
const CLOSE_BRACKET = 0x5d;
const COLON = 0x3a;
const COMMA = 0x2c;

/** The bytes that matter inside a nested value being skipped: 1 for quotes and brackets. */
const NESTED_STRUCTURE = new Uint8Array(256);
for (const byte of [QUOTE, OPEN_BRACE, CLOSE_BRACE, OPEN_BRACKET, CLOSE_BRACKET]) NESTED_STRUCTURE[byte] = 1;

function isWhitespace(byte: number): boolean {
  return byte === 0x20 || byte === 0x09 || byte === 0x0a || byte === 0x0d;
}

/** What the scanner expects next at the top level of the object. */
type Expecting = 'object' | 'first-field' | 'field' | 'colon' | 'value' | 'comma-or-end';

/** Whose string is being read: a top-level field name, `model`'s value, or any other (skipped). */
type StringRole = 'field-name' | 'model' | 'skipped';

function malformed(reason: string, offset: number): HttpError {
  return new HttpError(400, `Malformed JSON body: ${reason} at byte ${offset}`, 'invalid_json');
}

function invalidModel(message: string): ServerClientError {
  return new ServerClientError(`model: ${message}`, { code: 'invalid_request', fields: [['model']] });
}

/** A JSON string's content as sent (escapes included) decoded, or null when it is not valid JSON. */
function decodeJsonString(raw: number[]): string | null {
  try {
    const decoded: unknown = JSON.parse(`"${Buffer.from(raw).toString('utf8')}"`);
    return typeof decoded === 'string' ? decoded : null;
  } catch {
    return null;
  }
}

/** Where the next `"` or `\` of a chunk is, each found once per chunk (a search per string would be quadratic). */
class SkipAhead {
  #quote = -1;
  #backslash = -1;

  constructor(private readonly chunk: Uint8Array) {}

  /** The index of the first `"` or `\` at or after `from`, or the chunk's length. */
  nextStringByte(from: number): number {
    if (this.#quote < from) this.#quote = this.#find(QUOTE, from);
    if (this.#backslash < from) this.#backslash = this.#find(BACKSLASH, from);
    return Math.min(this.#quote, this.#backslash);
  }

  #find(byte: number, from: number): number {
    const found = this.chunk.indexOf(byte, from);
    return found === -1 ? this.chunk.length : found;
  }
}

/**
 * Feed it the body's chunks in order with `push`; it answers the model's name as soon as the
 * `model` string is closed, else null (more is needed); `endedError` is the answer to a body
 * that ends before. A body that cannot carry a model (not an object, malformed where scanned,
 * no `model`, a `model` that is not a non-empty string) throws the endpoint's 400, naming the
 * field.
 */
export class ModelFieldScanner {
  #expecting: Expecting = 'object';
  /** Depth inside a nested object or array being skipped; 0 at the top level of the object. */
  #depth = 0;
  #inString = false;
  #escaped = false;
  #stringRole: StringRole = 'skipped';
  /** Inside a number, `true`, `false` or `null` at the top level. */
  #inLiteral = false;
  /** The bytes of the field name or model value being read; null while skipping. */
  #captured: number[] | null = null;
  #capturedTooLong = false;
  #fieldIsModel = false;
  /** Bytes scanned so far, for error messages. */
  #offset = 0;

  /** The model's name once its string is closed, else null. */
  push(chunk: Uint8Array): string | null {
    const skip = new SkipAhead(chunk);
    let index = 0;
    while (index < chunk.length) {
      // The bulk of a large body is inside strings (prompts, base64 images): jump to the next
      // byte that can end one instead of stepping through each.
      if (this.#inString && this.#captured === null && !this.#escaped) {
        const next = skip.nextStringByte(index);
        this.#offset += next - index;
        index = next;
        if (index === chunk.length) break;
      } else if (!this.#inString && this.#depth > 0) {
        // Inside a nested value only quotes and brackets matter (token arrays are long runs of digits).
        const start = index;
        while (index < chunk.length && !NESTED_STRUCTURE[chunk[index] as number]) index += 1;
        this.#offset += index - start;
        if (index === chunk.length) break;
      }
      const model = this.#step(chunk[index] as number);
      this.#offset += 1;
      index += 1;
      if (model !== null) return model;
    }
    return null;
  }

  /** The 400 for a body that ended before its `model` was found. */
  endedError(): Error {
    if (this.#expecting === 'object')
      return malformed('the body is empty; expected a JSON object', this.#offset);
    return malformed('the body ends before its top-level object is closed', this.#offset);
  }

  #step(byte: number): string | null {
    if (this.#inString) return this.#stringByte(byte);
    if (this.#depth > 0) {
      this.#nestedByte(byte);
      return null;
    }
    if (this.#inLiteral) {
      if (byte !== COMMA && byte !== CLOSE_BRACE && !isWhitespace(byte)) return null;
      this.#inLiteral = false;
      this.#expecting = 'comma-or-end';
    }
    if (isWhitespace(byte)) return null;
    this.#structuralByte(byte);
    return null;
  }

  #stringByte(byte: number): string | null {
    if (this.#escaped) {
      this.#escaped = false;
    } else if (byte === BACKSLASH) {
      this.#escaped = true;
    } else if (byte === QUOTE) {
      this.#inString = false;
      return this.#stringClosed();
    }
    this.#capture(byte);
    return null;
  }

  #capture(byte: number): void {
    if (this.#captured === null) return;
    const limit = this.#stringRole === 'model' ? MODEL_NAME_MAX_BYTES : FIELD_NAME_MAX_BYTES;
    if (this.#captured.length >= limit) {
      this.#capturedTooLong = true;
      return;
    }
    this.#captured.push(byte);
  }

  #stringClosed(): string | null {
    const raw = this.#captured;
    const tooLong = this.#capturedTooLong;
    this.#captured = null;
    this.#capturedTooLong = false;
    if (this.#stringRole === 'field-name') {
      this.#fieldIsModel = !tooLong && raw !== null && decodeJsonString(raw) === 'model';
      this.#expecting = 'colon';
      return null;
    }
    if (this.#stringRole === 'model') {
      if (tooLong) throw invalidModel(`longer than ${MODEL_NAME_MAX_BYTES} bytes`);
      const model = raw === null ? null : decodeJsonString(raw);
      if (model === null) throw malformed('the model is not a valid JSON string', this.#offset);
      if (model === '') throw invalidModel('expected the name of a model (a string)');
      return model;
    }
    if (this.#depth === 0) this.#expecting = 'comma-or-end';
    return null;
  }

  #startString(role: StringRole): void {
    this.#inString = true;
    this.#stringRole = role;
    this.#captured = role === 'skipped' ? null : [];
  }

  #nestedByte(byte: number): void {
    if (byte === QUOTE) this.#startString('skipped');
    else if (byte === OPEN_BRACE || byte === OPEN_BRACKET) this.#depth += 1;
    else if (byte === CLOSE_BRACE || byte === CLOSE_BRACKET) {
      this.#depth -= 1;
      if (this.#depth === 0) this.#expecting = 'comma-or-end';
    }
  }

  #structuralByte(byte: number): void {
    switch (this.#expecting) {
      case 'object':
        if (byte !== OPEN_BRACE) throw invalidModel('field required (the body must be a JSON object)');
        this.#expecting = 'first-field';
        return;
      case 'first-field':
      case 'field':
        if (byte === CLOSE_BRACE && this.#expecting === 'first-field') throw invalidModel('field required');
        if (byte !== QUOTE) throw malformed('expected a field name in double quotes', this.#offset);
        this.#startString('field-name');
        return;
      case 'colon':
        if (byte !== COLON) throw malformed("expected ':' after a field name", this.#offset);
        this.#expecting = 'value';
        return;
      case 'value':
        this.#valueStart(byte);
        return;
      case 'comma-or-end':
        if (byte === COMMA) this.#expecting = 'field';
        else if (byte === CLOSE_BRACE) throw invalidModel('field required');
        else throw malformed("expected ',' or '}' after a value", this.#offset);
        return;
    }
  }

  #valueStart(byte: number): void {
    if (this.#fieldIsModel) {
      if (byte !== QUOTE) throw invalidModel('expected the name of a model (a string)');
      this.#startString('model');
      return;
    }
    if (byte === QUOTE) this.#startString('skipped');
    else if (byte === OPEN_BRACE || byte === OPEN_BRACKET) this.#depth = 1;
    else if (byte === COMMA || byte === CLOSE_BRACE || byte === COLON) {
      throw malformed('expected a value', this.#offset);
    } else this.#inLiteral = true;
  }
}
