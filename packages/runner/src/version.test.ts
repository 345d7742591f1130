import { readFileSync } from 'node:fs';
import { expect, it } from 'vitest';
import { VERSION } from './version.js';

it('reports the version of package.json', () => {
  const packageJson = JSON.parse(readFileSync(new URL('../package.json', import.meta.url), 'utf8')) as {
    version: string;
  };
  expect(VERSION).toBe(packageJson.version);
});
