import { expect, it } from 'vitest';
import { modelPathPrefix } from './project-models.js';

it('puts endpoints after the model prefix with exactly one slash', () => {
  expect(modelPathPrefix('/v1')).toBe('/v1');
  expect(modelPathPrefix('v1/')).toBe('/v1');
  expect(modelPathPrefix('//openai/v1//')).toBe('/openai/v1');
  expect(modelPathPrefix('/')).toBe('');
  expect(modelPathPrefix('')).toBe('');
});
