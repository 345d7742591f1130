import { execFileSync } from 'node:child_process';
import { describe, expect, it } from 'vitest';
import { shellQuote } from './shell-quote.js';

describe('shellQuote', () => {
  it('makes one sh word of any value, single quotes included', () => {
    expect(shellQuote("a b'c")).toBe(`'a b'\\''c'`);
    for (const value of ["a b'c", '$(touch /nonexistent)', '', 'tab\there', "''"]) {
      expect(execFileSync('sh', ['-c', `printf %s ${shellQuote(value)}`], { encoding: 'utf8' })).toBe(value);
    }
  });
});
