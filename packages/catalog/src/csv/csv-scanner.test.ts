import { describe, expect, it } from 'vitest';
import { CsvScanner, parseDecimal, parseInteger } from './csv-scanner.js';

function rows(text: string): string[][] {
  const scanner = new CsvScanner(text);
  const result: string[][] = [];
  while (scanner.nextRow()) {
    result.push(Array.from({ length: scanner.count }, (_, index) => scanner.field(index)));
  }
  return result;
}

describe('CsvScanner', () => {
  // Expected rows printed by Python's csv.reader (empty rows, which DictReader skips, left out).
  it.each<[string, string[][]]>([
    [
      'a,b\nc,d\n',
      [
        ['a', 'b'],
        ['c', 'd'],
      ],
    ],
    [
      'a,b\r\nc,d',
      [
        ['a', 'b'],
        ['c', 'd'],
      ],
    ],
    ['a,"b,c",d\n', [['a', 'b,c', 'd']]],
    ['ab"c,d\n', [['ab"c', 'd']]],
    ['"a""b",c\n', [['a"b', 'c']]],
    ['"a"bc,d\n', [['abc', 'd']]],
    ['a\rb\rc\n', [['a'], ['b'], ['c']]],
    ['x,"multi\nline",y\r\nz\n', [['x', 'multi\nline', 'y'], ['z']]],
    ['a,b\n\n\nc\n', [['a', 'b'], ['c']]],
    [',\n', [['', '']]],
    ['""\n', [['']]],
    ['a,""\n', [['a', '']]],
    ['"unterminated,x\n', [['unterminated,x\n']]],
    [
      'a,b,c,d,e,f,g,h,i,j,k,l,m,n,o,p,q,r,s,t,u,v,w,x,y,z,1,2,3,4,5,6,7,8,9\n',
      [[...'abcdefghijklmnopqrstuvwxyz123456789']],
    ],
  ])('%j', (text, expected) => {
    expect(rows(text)).toEqual(expected);
  });

  it('tracks the line where each row starts', () => {
    const scanner = new CsvScanner('h\r\n"a\r\nb"\r\n\r\nc\rd\n');
    const lines: number[] = [];
    while (scanner.nextRow()) lines.push(scanner.line);
    expect(lines).toEqual([1, 2, 5, 6]);
  });
});

describe('number parsing', () => {
  const parse = (parser: typeof parseDecimal, text: string) => parser(text, 0, text.length);

  it.each<[string, number]>([
    ['1.0', 1],
    ['3.67339', 3.67339],
    [' 2.5 ', 2.5],
    ['-0.25', -0.25],
    ['.5', 0.5],
    ['5.', 5],
    ['1e-05', 1e-5],
    ['1E+16', 1e16],
    ['0.1234567890123456789', Number('0.1234567890123456789')],
    ['123456789012345678901', Number('123456789012345678901')],
  ])('decimal %j', (text, expected) => {
    expect(parse(parseDecimal, text)).toBe(expected);
  });

  it.each(['', ' ', '-', '.', '1.2.3', 'abc', '1,5', 'inf', 'nan', '0x10', '1e400', '--1'])(
    'decimal %j is rejected',
    (text) => {
      expect(parse(parseDecimal, text)).toBeNaN();
    },
  );

  it('parses integers like int()', () => {
    expect(parse(parseInteger, '192')).toBe(192);
    expect(parse(parseInteger, ' +8 ')).toBe(8);
    expect(parse(parseInteger, '-3')).toBe(-3);
    for (const text of ['', '1.0', '1e3', 'x', '-', '99999999999999999999']) {
      expect(parse(parseInteger, text)).toBeNaN();
    }
  });
});
