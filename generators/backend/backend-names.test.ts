import { describe, expect, it } from 'vitest';
import { backendNameProblem, backendNames, withListedPackageName } from './backend-names.js';

describe('backendNames', () => {
  it('derives one set of names from PascalCase, camelCase, kebab-case or words', () => {
    const expected = {
      type: 'examplexyz',
      kebab: 'example-xyz',
      pascal: 'ExampleXyz',
      camel: 'exampleXyz',
      constant: 'EXAMPLE_XYZ',
      packageName: '@dstack/backend-example-xyz',
      directory: 'packages/backend-example-xyz',
    };

    for (const input of ['ExampleXyz', 'exampleXyz', 'example-xyz', 'Example Xyz', ' example_xyz ']) {
      expect(backendNames(input)).toEqual(expected);
    }
  });

  it('keeps acronyms and digits as words', () => {
    expect(backendNames('VastAI')).toMatchObject({ type: 'vastai', kebab: 'vast-ai', pascal: 'VastAi' });
    expect(backendNames('OCI')).toMatchObject({ type: 'oci', kebab: 'oci', constant: 'OCI' });
    expect(backendNames('Cloud9Gpu')).toMatchObject({ type: 'cloud9gpu', kebab: 'cloud9-gpu' });
  });

  it('explains a name it refuses', () => {
    expect(backendNameProblem('')).toMatch(/name is required/);
    expect(backendNameProblem('9cloud')).toMatch(/must start with a letter/);
    expect(backendNameProblem('my.cloud')).toMatch(/must start with a letter and contain only/);
    expect(backendNameProblem('X')).toMatch(/too short/);
    expect(backendNameProblem('A'.repeat(31))).toMatch(/too long/);
    expect(() => backendNames('9cloud')).toThrow(/must start with a letter/);
  });
});

describe('withListedPackageName', () => {
  it('puts a listed type in the package the map names, keeping the code identifiers', () => {
    const names = withListedPackageName(backendNames('VastAI'), '@dstack/backend-vastai');
    expect(names).toMatchObject({
      type: 'vastai',
      kebab: 'vastai',
      packageName: '@dstack/backend-vastai',
      directory: 'packages/backend-vastai',
      pascal: 'VastAi',
    });
  });
});
