import { describe, expect, it } from 'vitest';
import { parse, stringify } from 'yaml';
import { parsePlainConfig } from './plain-config-text.js';

/** The reader agrees with the YAML parser wherever it answers; undefined leaves `text` to the parser. */
function expectParserAgrees(text: string): ReturnType<typeof parsePlainConfig> {
  const plain = parsePlainConfig(text);
  if (plain !== undefined) expect(plain, JSON.stringify(text)).toEqual(parse(text));
  return plain;
}

/** A one-project file as dstack's CLI writes it (PyYAML: the list at the margin, keys sorted). */
function dstackStyle(url: string, token: string): string {
  return `projects:\n- default: true\n  name: main\n  token: ${token}\n  url: ${url}\n`;
}

/** Values that look like strings, and plain scalars YAML reads otherwise or rejects. */
const TRICKY_VALUES = [
  'http://127.0.0.1:3000',
  'https://dstack.example.com/prefix/',
  'http://[::1]:3000',
  '0f3a6c8e-2b1d-4e5f-9a7b-1c2d3e4f5a6b',
  'bench-admin-token',
  'a+b/c=d',
  'user@host',
  'a~b',
  '1_000',
  '0b101',
  '.',
  '..',
  'true',
  'True',
  'TRUE',
  'false',
  'FALSE',
  'null',
  'Null',
  'NULL',
  '~',
  '',
  '123',
  '-1',
  '+1',
  '0o17',
  '0x1F',
  '1e3',
  '1.5e-3',
  '.5',
  '1.',
  '.inf',
  '-.Inf',
  '.nan',
  'a:',
  'a:b',
  'a: b',
  'a #b',
  'a#b',
  '#a',
  '-a',
  '- a',
  '?a',
  ':a',
  '@a',
  '`a',
  '%a',
  '!a',
  '&a',
  '*a',
  '|',
  '>',
  '"quoted"',
  "'quoted'",
  '[a]',
  '{a: b}',
  'a,b',
  'a ',
  ' a',
  'a\tb',
  'é',
];

describe('parsePlainConfig', () => {
  it('reads the file this CLI writes and the one dstack writes, as the YAML parser does', () => {
    const ours = stringify({
      projects: [
        { name: 'main', url: 'http://127.0.0.1:3000', token: 'bench-admin-token', default: true },
        { name: 'other', url: 'https://dstack.example.com', token: '0f3a6c8e-2b1d', default: false },
      ],
    });
    expect(expectParserAgrees(ours)?.projects).toHaveLength(2);
    expect(expectParserAgrees(dstackStyle('http://127.0.0.1:3000', 'abc'))).toEqual({
      projects: [{ default: true, name: 'main', token: 'abc', url: 'http://127.0.0.1:3000' }],
    });
  });

  it('answers only what the YAML parser reads the same, for values of every kind', () => {
    let read = 0;
    for (const value of TRICKY_VALUES) {
      for (const text of [
        dstackStyle(value, 'token'),
        dstackStyle('http://h', value),
        `projects:\n  - name: ${value}\n    url: http://h\n`,
        `projects:\n    - default: ${value}\n      name: main\n`,
      ]) {
        let parsed: unknown;
        try {
          parsed = parse(text, { logLevel: 'silent' });
        } catch {
          expect(parsePlainConfig(text), JSON.stringify(text)).toBeUndefined();
          continue;
        }
        const plain = parsePlainConfig(text);
        if (plain === undefined) continue;
        read += 1;
        expect(plain, JSON.stringify(text)).toEqual(parsed);
      }
    }
    // The string-like values are read here, not left to the parser.
    expect(read).toBeGreaterThan(30);
  });

  it('leaves every other shape to the YAML parser', () => {
    const others = [
      '',
      'projects:\n',
      'projects: []\n',
      '---\nprojects:\n  - name: main\n',
      'projects:\n  - name: main # comment\n',
      '# comment\nprojects:\n  - name: main\n',
      'projects:\n\n  - name: main\n',
      'projects:\r\n  - name: main\r\n',
      'projects:\n\t- name: main\n',
      'projects:\n  - name: main\n    url: http://h\nrepos: []\n',
      'projects:\n  - name: main\n      url: http://h\n',
      'projects:\n  - name: main\n   url: http://h\n',
      'projects:\n  - name: main\n - name: other\n',
      'projects:\n  - name: main\n    name: again\n',
      'projects:\n  - true: x\n',
      'projects:\n  - null: x\n',
      'projects:\n  - __proto__: x\n',
      'projects:\n  - Name: x\n',
      'projects:\n  - name:\n',
      'projects:\n  - name: \n',
      'projects:\n  -  name: main\n',
      'projects:\n  - name: main\n    url:http://h\n',
      'projects:\n  - {name: main}\n',
      'projects:\n  - name: "main"\n',
      'projects:\n  - name: main\n    nested:\n      key: value\n',
    ];
    for (const text of others) {
      expect(parsePlainConfig(text), JSON.stringify(text)).toBeUndefined();
    }
  });
});
