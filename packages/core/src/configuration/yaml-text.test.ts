import { describe, expect, test } from 'vitest';
import { ConfigurationError } from '../errors.js';
import { formatConfigurationError } from './configuration-error.js';
import { parseConfiguration, parseProfilesFile } from './parse-configuration.js';
import { MAX_YAML_BYTES, parseYamlText } from './yaml-text.js';

/** The "billion laughs" document: each level repeats the previous one nine times. */
const ALIAS_BOMB = [
  'type: task',
  'a: &a ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]',
  'b: &b [*a,*a,*a,*a,*a,*a,*a,*a,*a]',
  'c: &c [*b,*b,*b,*b,*b,*b,*b,*b,*b]',
  'd: &d [*c,*c,*c,*c,*c,*c,*c,*c,*c]',
  'e: &e [*d,*d,*d,*d,*d,*d,*d,*d,*d]',
  'commands: [echo]',
  '',
].join('\n');

function configurationError(parse: () => unknown): ConfigurationError {
  try {
    parse();
  } catch (error) {
    if (ConfigurationError.isInstance(error)) return error;
    throw error;
  }
  throw new Error('expected a ConfigurationError');
}

describe('parseYamlText', () => {
  test('an alias bomb is a positioned error at the alias that multiplies most', () => {
    const error = configurationError(() => parseConfiguration(ALIAS_BOMB, { path: 'bomb.yml' }));
    expect(formatConfigurationError(error)).toBe(
      'bomb.yml:6:8: invalid YAML: alias *d expands the document too much (aliases may repeat content at most 100 times)',
    );
  });

  test('an alias bomb in a profiles file is refused the same way', () => {
    const text = `profiles:\n  - name: p\n    x: &x [1,2,3,4,5,6,7,8,9,10]\n    y: &y [${Array(12).fill('*x').join(',')}]\n    z: [${Array(12).fill('*y').join(',')}]\n`;
    const error = configurationError(() => parseProfilesFile(text, { path: 'profiles.yml' }));
    expect(error.message).toMatch(/^invalid YAML: alias \*y expands the document too much/);
    expect([error.file, error.line]).toEqual(['profiles.yml', 5]);
  });

  test('a few aliases still work', () => {
    const text = 'type: task\nenv: &env\n  - A=1\ncommands: [echo]\nx-unused: *env\n';
    expect(parseYamlText(text).data).toMatchObject({ env: ['A=1'], 'x-unused': ['A=1'] });
  });

  test('text over the size limit is refused before parsing, naming the file and the limit', () => {
    // Invalid YAML beyond the limit: the size error must come first.
    const text = `type: task\ncommands:\n${'  - echo\n'.repeat(MAX_YAML_BYTES / 9)}: [\n`;
    const error = configurationError(() => parseConfiguration(text, { path: 'big.yml' }));
    expect(formatConfigurationError(error)).toBe(
      'big.yml: the file is 1 MiB, over the 1 MiB limit for YAML files',
    );
    // Exactly at the limit (one long comment, quick to parse) is accepted.
    expect(parseYamlText(`#${'x'.repeat(MAX_YAML_BYTES - 2)}\n`).data).toBeNull();
  });

  test('the limit counts bytes, not characters', () => {
    const text = `name: ${'é'.repeat(MAX_YAML_BYTES / 2)}\n`;
    const error = configurationError(() => parseYamlText(text, { file: 'wide.yml' }));
    expect(error.message).toMatch(/^the file is 1 MiB, over the 1 MiB limit/);
  });

  test.each([
    ['an unresolved alias', 'type: task\ncommands: *nothing\n', 2, 11],
    ['a tab indentation', 'type: task\ncommands:\n\t- echo\n', 3, 1],
    ['two documents', 'type: task\n---\ntype: service\n', 2, 1],
    ['an unclosed quote', 'type: task\nname: "x\n', 3, 1],
  ])('%s is one positioned line', (_name, text, line, column) => {
    const error = configurationError(() => parseConfiguration(text, { path: 'app.yml' }));
    const printed = formatConfigurationError(error);
    expect(printed).toMatch(/^app\.yml:\d+:\d+: invalid YAML: /);
    expect(printed).not.toContain('\n');
    expect([error.line, error.column]).toEqual([line, column]);
  });
});
