import { describe, expect, it } from 'vitest';
import packageJson from '../package.json' with { type: 'json' };
import { VERSION } from './version.js';

describe('VERSION', () => {
  it("equals package.json's version (changesets bumps package.json; update version.ts with it)", () => {
    expect(VERSION).toBe(packageJson.version);
  });
});
