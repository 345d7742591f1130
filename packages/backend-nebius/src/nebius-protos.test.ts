import { describe, expect, it } from 'vitest';
import { loadNebiusPackageDefinition } from './nebius-protos.js';

describe('the vendored Nebius protos', () => {
  it('load the services the backend calls, with their wire paths', () => {
    const definition = loadNebiusPackageDefinition();
    const instances = definition['nebius.compute.v1.InstanceService'] as Record<string, { path: string }>;
    expect(instances.Create?.path).toBe('/nebius.compute.v1.InstanceService/Create');
    expect(Object.keys(definition).filter((name) => name.endsWith('Service'))).toEqual(
      expect.arrayContaining([
        'nebius.iam.v1.TokenExchangeService',
        'nebius.common.v1.OperationService',
        'nebius.billing.v1alpha1.CalculatorService',
      ]),
    );
  });
});
