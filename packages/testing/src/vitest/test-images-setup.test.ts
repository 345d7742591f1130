import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { testImagesUsedBy } from './test-images-setup.js';

const repository = (path: string) => fileURLToPath(new URL(`../../../../${path}`, import.meta.url));

describe('testImagesUsedBy', () => {
  it('finds the images a cloud end-to-end file uses through its scenario modules', () => {
    // The AWS files name none themselves: vm-cloud-runs.ts and torchrun-cluster.ts do.
    expect(testImagesUsedBy([repository('packages/server/test/aws-emulator.test.ts')])).toEqual(
      new Set(['runner', 'emulated-hosts', 'base']),
    );
    expect(testImagesUsedBy([repository('packages/server/test/aws-torchrun.test.ts')])).toEqual(
      new Set(['runner', 'emulated-hosts', 'torch', 'base']),
    );
  });

  it('finds the emulated hosts of a backend test that boots its user data on them', () => {
    expect(testImagesUsedBy([repository('packages/backend-aws/src/aws-user-data-boot.test.ts')])).toEqual(
      new Set(['emulated-hosts']),
    );
  });

  it('finds none for unit tests, so running one builds nothing', () => {
    expect(
      testImagesUsedBy([
        repository('packages/core/src/version.test.ts'),
        repository('packages/server/src/db/migrations.test.ts'),
        // Its own tests: the module names every helper it looks for.
        fileURLToPath(new URL('./test-images-setup.test.ts', import.meta.url)),
      ]),
    ).toEqual(new Set());
  });
});
