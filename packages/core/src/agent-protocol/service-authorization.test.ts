import { describe, expect, it } from 'vitest';
import { authorizationCredential } from './service-authorization.js';

describe('authorizationCredential', () => {
  it.each([
    ['Bearer token-1', 'token-1'],
    ['bearer   token-1  ', 'token-1'],
    ['Token token-1', 'token-1'],
    ['token-1', 'token-1'],
    ['', null],
    ['   ', null],
    [undefined, null],
  ])('%j → %j', (header, credential) => {
    expect(authorizationCredential(header)).toBe(credential);
  });
});
