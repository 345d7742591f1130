/**
 * Text formatting that matches CPython byte for byte, so that catalog files written here
 * are identical to the ones gpuhunt writes.
 */

/**
 * Formats a number like Python's `str(float)` (`repr`): the shortest digits that round-trip
 * (as JavaScript also picks), fixed notation with at least one decimal (`1152.0`, `0.1`)
 * when the decimal exponent is in [-4, 16), else scientific with a signed two-digit
 * exponent (`1e-05`, `1.5e+16`); `inf`, `-inf`, `nan`, `-0.0`.
 */
export function formatPythonFloat(value: number): string {
  if (Number.isNaN(value)) return 'nan';
  if (value === Number.POSITIVE_INFINITY) return 'inf';
  if (value === Number.NEGATIVE_INFINITY) return '-inf';
  if (value === 0) return Object.is(value, -0) ? '-0.0' : '0.0';
  // toExponential() without an argument gives the shortest round-trip digits.
  const exponential = value.toExponential();
  const sign = value < 0 ? '-' : '';
  const eIndex = exponential.indexOf('e');
  const mantissa = exponential.slice(sign.length, eIndex);
  const exponent = Number(exponential.slice(eIndex + 1));
  const digits = mantissa.length > 1 ? mantissa[0] + mantissa.slice(2) : mantissa;
  // Python's float_repr_style "short": scientific when decpt <= -4 or decpt > 16.
  const decimalPoint = exponent + 1;
  if (decimalPoint <= -4 || decimalPoint > 16) {
    const fraction = digits.length > 1 ? `${digits[0]}.${digits.slice(1)}` : digits;
    const exponentText = String(Math.abs(exponent)).padStart(2, '0');
    return `${sign}${fraction}e${exponent < 0 ? '-' : '+'}${exponentText}`;
  }
  if (decimalPoint <= 0) return `${sign}0.${'0'.repeat(-decimalPoint)}${digits}`;
  if (decimalPoint >= digits.length) return `${sign}${digits}${'0'.repeat(decimalPoint - digits.length)}.0`;
  return `${sign}${digits.slice(0, decimalPoint)}.${digits.slice(decimalPoint)}`;
}

/**
 * Serializes a JSON value like Python's `json.dumps` with default settings: `", "` and
 * `": "` separators, non-ASCII and control characters escaped as `\uXXXX`, non-integral
 * numbers via {@link formatPythonFloat}. JavaScript has no int/float distinction, so an
 * integral number is written as an int (`2`, never `2.0`).
 */
export function pythonJsonDumps(value: unknown): string {
  if (value === null || value === undefined) return 'null';
  switch (typeof value) {
    case 'boolean':
      return value ? 'true' : 'false';
    case 'number':
      if (Number.isNaN(value)) return 'NaN';
      if (value === Number.POSITIVE_INFINITY) return 'Infinity';
      if (value === Number.NEGATIVE_INFINITY) return '-Infinity';
      return Number.isInteger(value) && !Object.is(value, -0)
        ? BigInt(value).toString()
        : formatPythonFloat(value);
    case 'bigint':
      return value.toString();
    case 'string':
      return pythonJsonString(value);
    case 'object': {
      if (Array.isArray(value)) return `[${value.map(pythonJsonDumps).join(', ')}]`;
      const entries = Object.entries(value as Record<string, unknown>).filter(
        ([, entry]) => entry !== undefined,
      );
      return `{${entries.map(([key, entry]) => `${pythonJsonString(key)}: ${pythonJsonDumps(entry)}`).join(', ')}}`;
    }
    default:
      throw new TypeError(`Object of type ${typeof value} is not JSON serializable`);
  }
}

const SHORT_ESCAPES: Record<number, string> = {
  34: '\\"',
  92: '\\\\',
  10: '\\n',
  13: '\\r',
  9: '\\t',
  8: '\\b',
  12: '\\f',
};

function pythonJsonString(text: string): string {
  let result = '"';
  let runStart = 0;
  for (let index = 0; index < text.length; index++) {
    const code = text.charCodeAt(index);
    // json.dumps(ensure_ascii=True) keeps exactly the printable ASCII range as is.
    if (code >= 0x20 && code <= 0x7e && code !== 0x22 && code !== 0x5c) continue;
    result += text.slice(runStart, index);
    result += SHORT_ESCAPES[code] ?? `\\u${code.toString(16).padStart(4, '0')}`;
    runStart = index + 1;
  }
  return `${result}${text.slice(runStart)}"`;
}
