import { describe, expect, it } from 'vitest';
import { generateUniqueBackendName, mergeTags } from './names.js';

describe('generateUniqueBackendName', () => {
  it('is dstack-{project}-{name}-{8 random [a-z0-9]}', () => {
    const name = generateUniqueBackendName('main', 'train-0-0');
    expect(name).toMatch(/^dstack-main-train-0-0-[a-z0-9]{8}$/);
    expect(generateUniqueBackendName('main', 'train-0-0')).not.toBe(name);
  });

  it('truncates the prefix to stay within 60 characters', () => {
    const name = generateUniqueBackendName('project', 'x'.repeat(80));
    expect(name).toHaveLength(60);
    expect(name).toMatch(/^dstack-project-x+-[a-z0-9]{8}$/);
    expect(generateUniqueBackendName('p1', 'abc', { maxLength: 12, random: () => 0 })).toBe('dst-aaaaaaaa');
  });

  it('gives the same name for the same seed, another for another seed', () => {
    const name = generateUniqueBackendName('main', 'train-0-0', { seed: 'instance-1' });
    // Pinned: launched instances are found again by this name, so the derivation must not drift.
    expect(name).toBe('dstack-main-train-0-0-ncwpytl8');
    expect(generateUniqueBackendName('main', 'train-0-0', { seed: 'instance-1' })).toBe(name);
    expect(generateUniqueBackendName('main', 'train-0-0', { seed: 'instance-2' })).not.toBe(name);
  });

  it('leaves out a project name that is not valid in every backend', () => {
    expect(generateUniqueBackendName('My_Project', 'fleet-1')).toMatch(/^dstack-fleet-1-[a-z0-9]{8}$/);
    expect(generateUniqueBackendName(null, 'fleet-1')).toMatch(/^dstack-fleet-1-[a-z0-9]{8}$/);
  });
});

describe('mergeTags', () => {
  it('lets base tags win over backend tags, and backend tags over user tags', () => {
    expect(
      mergeTags({ owner: 'dstack' }, { team: 'infra', owner: 'me' }, { team: 'ml', env: 'dev', owner: 'x' }),
    ).toEqual({ owner: 'dstack', team: 'infra', env: 'dev' });
  });
});
