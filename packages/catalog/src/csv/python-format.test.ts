import { describe, expect, it } from 'vitest';
import { formatPythonFloat, pythonJsonDumps } from './python-format.js';

describe('formatPythonFloat', () => {
  // Expected values printed by CPython 3 `str(float)`.
  it.each<[number, string]>([
    [0, '0.0'],
    [-0, '-0.0'],
    [1, '1.0'],
    [1152, '1152.0'],
    [0.1, '0.1'],
    [0.1 + 0.2, '0.30000000000000004'],
    [1e-5, '1e-05'],
    [1e-4, '0.0001'],
    [0.0001234, '0.0001234'],
    [3.67339, '3.67339'],
    [1e16, '1e+16'],
    [1e15, '1000000000000000.0'],
    [9999999999999998, '9999999999999998.0'],
    [123456789012345680, '1.2345678901234568e+17'],
    [1.5e300, '1.5e+300'],
    [5e-324, '5e-324'],
    [1.7976931348623157e308, '1.7976931348623157e+308'],
    [-2.5, '-2.5'],
    [-1e-7, '-1e-07'],
    [12.5, '12.5'],
    [100, '100.0'],
    [0.000123, '0.000123'],
    [1 / 3, '0.3333333333333333'],
    [98.32, '98.32'],
    [1e22, '1e+22'],
    [1e21, '1e+21'],
    [123e-20, '1.23e-18'],
    [Number.POSITIVE_INFINITY, 'inf'],
    [Number.NEGATIVE_INFINITY, '-inf'],
    [Number.NaN, 'nan'],
  ])('%d → %s', (value, expected) => {
    expect(formatPythonFloat(value)).toBe(expected);
  });
});

describe('pythonJsonDumps', () => {
  it('uses Python separators and literals', () => {
    expect(pythonJsonDumps({ k: 1, f: 0.25, n: null, t: true, list: [1, 2.5, 'x'], nested: { a: [] } })).toBe(
      '{"k": 1, "f": 0.25, "n": null, "t": true, "list": [1, 2.5, "x"], "nested": {"a": []}}',
    );
    expect(pythonJsonDumps({})).toBe('{}');
    expect(pythonJsonDumps({ small: 1e-7 })).toBe('{"small": 1e-07}');
  });

  it('escapes like ensure_ascii', () => {
    expect(pythonJsonDumps('café "q" \\ \t\u0001\u007f 😀\n')).toBe(
      '"caf\\u00e9 \\"q\\" \\\\ \\t\\u0001\\u007f \\ud83d\\ude00\\n"',
    );
  });

  it('writes integral numbers as ints (JavaScript has no float type)', () => {
    expect(pythonJsonDumps({ x: 2.0, big: 1e20 })).toBe('{"x": 2, "big": 100000000000000000000}');
  });
});
