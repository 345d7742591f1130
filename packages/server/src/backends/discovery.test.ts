import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { KNOWN_BACKENDS, BACKEND_PACKAGES as THE_ONE_MAP } from '@dstack/catalog';
import { BACKEND_TYPE_PATTERN, BackendPluginError, ConfigurationError } from '@dstack/core';
import { createFakeBackendPlugin } from '@dstack/testing';
import { describe, expect, it } from 'vitest';
import {
  BACKEND_PACKAGES,
  isPackageNotFound,
  listAvailableBackendTypes,
  loadBackendPlugin,
} from './discovery.js';

function notFound(packageName: string): Error {
  return Object.assign(
    new Error(`Cannot find package '${packageName}' imported from /srv/server/dist/backends/discovery.js`),
    {
      code: 'ERR_MODULE_NOT_FOUND',
    },
  );
}

describe('loadBackendPlugin', () => {
  it('loads and checks the plugin of a configured type', async () => {
    const plugin = { ...createFakeBackendPlugin(), type: 'aws' };
    const loaded = await loadBackendPlugin('aws', async (name) => {
      expect(name).toBe('@dstack/backend-aws');
      return { default: plugin };
    });
    expect(loaded.type).toBe('aws');
  });

  it('says how to install a missing package', async () => {
    const error = await loadBackendPlugin('aws', async (name) => {
      throw notFound(name);
    }).catch((thrown: unknown) => thrown);
    expect(ConfigurationError.isInstance(error)).toBe(true);
    expect((error as Error).message).toBe(
      'Backend "aws" is configured but its package is not installed: run "pnpm add @dstack/backend-aws" (or npm install @dstack/backend-aws)',
    );
  });

  it('does not blame the package for its own missing dependency', async () => {
    await expect(
      loadBackendPlugin('aws', async () => {
        throw notFound('@aws-sdk/client-ec2');
      }),
    ).rejects.toThrow(/Cannot find package '@aws-sdk\/client-ec2'/);
    expect(isPackageNotFound(notFound('@dstack/backend-aws-extra'), '@dstack/backend-aws')).toBe(false);
  });

  it('lists the known types for an unknown one, and rejects non-plugins', async () => {
    await expect(loadBackendPlugin('acme')).rejects.toThrow(
      `Unknown backend type "acme"; known types: ${KNOWN_BACKENDS.map(({ type }) => type).join(', ')}`,
    );
    const error = await loadBackendPlugin('gcp', async () => ({ default: { hello: 1 } })).catch(
      (thrown: unknown) => thrown,
    );
    expect(BackendPluginError.isInstance(error)).toBe(true);
  });

  it('recognises the real "not installed" error of this runtime', async () => {
    // A listed backend the server package does not depend on (aws until it is written, then the next).
    const manifest = JSON.parse(readFileSync(join(import.meta.dirname, '../../package.json'), 'utf8')) as {
      dependencies?: Record<string, string>;
      devDependencies?: Record<string, string>;
    };
    const installed = { ...manifest.dependencies, ...manifest.devDependencies };
    const absent = KNOWN_BACKENDS.find(({ packageName }) => !(packageName in installed));
    if (!absent)
      throw new Error('every listed backend is a dependency of the server: pick another absent package');

    const error = await import(absent.packageName).catch((thrown: unknown) => thrown);

    expect(isPackageNotFound(error, absent.packageName)).toBe(true);
    expect(await listAvailableBackendTypes()).not.toContain(absent.type);
  });
});

describe('BACKEND_PACKAGES', () => {
  it("is @dstack/catalog's one map (which the generator keeps), with a valid type and a @dstack/backend-* package per entry", () => {
    expect(BACKEND_PACKAGES).toBe(THE_ONE_MAP);
    for (const [type, packageName] of Object.entries(BACKEND_PACKAGES)) {
      expect(type).toMatch(BACKEND_TYPE_PATTERN);
      expect(packageName).toMatch(/^@dstack\/backend-[a-z0-9-]+$/);
    }
  });
});
