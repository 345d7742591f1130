import { describe, expect, test } from 'vitest';
import type { z } from 'zod';
import { issuesToConfigurationError } from './configuration-error.js';

type Issue = z.core.$ZodIssue;

/**
 * `count` list items, each with a misspelled field (`prot`) and the field it left missing
 * (`port`), as zod reports them; `reads` counts how often the issues' paths are read.
 */
function misspelledItems(count: number, reads: { count: number }): Issue[] {
  const issues: Issue[] = [];
  const counted = (issue: Omit<Issue, 'path'>, path: PropertyKey[]) =>
    Object.defineProperty(issue, 'path', {
      enumerable: true,
      get() {
        reads.count += 1;
        return path;
      },
    }) as Issue;
  for (let index = 0; index < count; index++) {
    issues.push(
      counted(
        { code: 'unrecognized_keys', keys: ['prot'], message: "unknown field 'prot'", input: {} } as never,
        ['ports', index],
      ),
    );
    issues.push(
      counted(
        { code: 'invalid_type', expected: 'number', input: undefined, message: 'Invalid input' } as never,
        ['ports', index, 'port'],
      ),
    );
  }
  return issues;
}

describe('issuesToConfigurationError', () => {
  test('pairs a missing field with the unknown one beside it', () => {
    const error = issuesToConfigurationError(misspelledItems(3, { count: 0 }), {
      rootLabel: 'configuration',
    });
    expect(error.message).toBe("unknown field 'prot' in ports[0] (and required field 'port' is missing)");
    expect(error.path).toEqual(['ports', 0, 'prot']);
  });

  test('reads each issue a bounded number of times, however many there are (no search per issue)', () => {
    // Searching the unknown fields for each missing one read paths n²/2 times: 2·10⁶ here.
    for (const count of [100, 2000]) {
      const reads = { count: 0 };
      issuesToConfigurationError(misspelledItems(count, reads), { rootLabel: 'configuration' });
      expect(reads.count).toBeLessThanOrEqual(10 * 2 * count);
    }
  });
});
