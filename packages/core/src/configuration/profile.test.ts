import { describe, expect, test } from 'vitest';
import { ConfigurationError } from '../errors.js';
import { parseProfilesFile } from './parse-configuration.js';
import { profileParamsSchema, profilesFileSchema } from './profile.js';

describe('profiles file', () => {
  test('parses profiles with defaults', () => {
    const file = parseProfilesFile(
      'profiles:\n  - name: large\n    default: true\n    spot_policy: auto\n    max_duration: 1d\n  - name: cheap\n    max_price: 0.5\n',
      { path: '.dstack/profiles.yml' },
    );
    expect(file).toEqual({
      profiles: [
        { name: 'large', default: true, spot_policy: 'auto', max_duration: 86_400 },
        { name: 'cheap', default: false, max_price: 0.5 },
      ],
    });
    expect(profilesFileSchema.parse(JSON.parse(JSON.stringify(file)))).toEqual(file);
  });

  test('an empty file has no profiles', () => {
    expect(parseProfilesFile('')).toEqual({ profiles: [] });
  });

  test('errors carry file, line, column and path', () => {
    try {
      parseProfilesFile('profiles:\n  - name: x\n    spot_polcy: spot\n', { path: '.dstack/profiles.yml' });
      expect.unreachable();
    } catch (error) {
      expect(ConfigurationError.isInstance(error)).toBe(true);
      expect(error).toMatchObject({
        file: '.dstack/profiles.yml',
        line: 3,
        column: 5,
        path: ['profiles', 0, 'spot_polcy'],
        message: "unknown field 'spot_polcy' in profiles[0]; did you mean 'spot_policy'?",
      });
    }
    expect(() =>
      parseProfilesFile('profiles:\n  - name: a\n    default: true\n  - name: b\n    default: true\n'),
    ).toThrow('only one profile may be the default');
  });

  test('profile params on their own', () => {
    expect(profileParamsSchema.parse({ idle_duration: false, retry: { duration: '2h' } })).toEqual({
      idle_duration: 'off',
      retry: { on_events: ['no-capacity', 'interruption', 'error'], duration: 7200 },
    });
    expect(
      profileParamsSchema.safeParse({ backend_options: [{ type: 'aws' }, { type: 'aws' }] }).success,
    ).toBe(false);
    expect(profileParamsSchema.safeParse({ schedule: { cron: 'every day' } }).success).toBe(false);
  });
});
