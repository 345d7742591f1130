import { describe, expect, it } from 'vitest';
import { pythonRound } from '../providers/python-round.js';
import { parseCsvRecords, parseCsvRows } from './csv-records.js';
import { parsePythonLiteral } from './python-literal.js';

describe('parseCsvRows', () => {
  it('reads quoted fields with commas, doubled quotes and newlines', () => {
    expect(parseCsvRows('a,"b,c","say ""hi""","x\ny"\n1,,3,\n')).toEqual([
      ['a', 'b,c', 'say "hi"', 'x\ny'],
      ['1', '', '3', ''],
    ]);
  });

  it('accepts CRLF and a missing final newline', () => {
    expect(parseCsvRows('a,b\r\n1,"2, NA"\r\n3,4')).toEqual([
      ['a', 'b'],
      ['1', '2, NA'],
      ['3', '4'],
    ]);
  });

  it('keys records by the header and pads short rows', () => {
    expect(parseCsvRecords('\ufeffInstanceType,Price,SpotPrice\nm5.large,0.096\n')).toEqual([
      { InstanceType: 'm5.large', Price: '0.096', SpotPrice: '' },
    ]);
  });
});

describe('parsePythonLiteral', () => {
  it('parses a SkyPilot GpuInfo cell', () => {
    const text =
      "{'Gpus': [{'Name': 'A100', 'Manufacturer': 'NVIDIA', 'Count': 8, 'MemoryInfo': {'SizeInMiB': 40960}}], 'TotalGpuMemoryInMiB': 327680}";
    expect(parsePythonLiteral(text)).toEqual({
      Gpus: [{ Name: 'A100', Manufacturer: 'NVIDIA', Count: 8, MemoryInfo: { SizeInMiB: 40960 } }],
      TotalGpuMemoryInMiB: 327680,
    });
  });

  it('parses lists, tuples, escapes, constants and floats', () => {
    expect(parsePythonLiteral(`['AWS', "it's", ('x', 1.5e3), True, False, None, -2, 'a\\'b']`)).toEqual([
      'AWS',
      "it's",
      ['x', 1500],
      true,
      false,
      null,
      -2,
      "a'b",
    ]);
  });

  it('rejects malformed input', () => {
    expect(() => parsePythonLiteral("{'a': 1")).toThrow(SyntaxError);
    expect(() => parsePythonLiteral("{'a': 1} x")).toThrow(/trailing/);
  });
});

describe('pythonRound', () => {
  it('rounds ties to even as Python does', () => {
    expect(pythonRound(3.75, 1)).toBe(3.8);
    expect(pythonRound(0.125, 2)).toBe(0.12);
    expect(pythonRound(0.375, 2)).toBe(0.38);
  });

  it('rounds the binary value, not the decimal text (2.675 is below the tie)', () => {
    expect(pythonRound(2.675, 2)).toBe(2.67);
  });

  it('removes float noise from sums of prices', () => {
    expect(pythonRound(0.73948 + 2.93391, 6)).toBe(3.67339);
    expect(pythonRound(0.14679 + 0.56004, 6)).toBe(0.70683);
    expect(pythonRound(1 / 3, 6)).toBe(0.333333);
  });
});
