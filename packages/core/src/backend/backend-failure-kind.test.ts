import { describe, expect, it } from 'vitest';
import {
  BackendApiCallError,
  BackendAuthenticationError,
  BackendError,
  BackendRateLimitError,
  InvalidCredentialsError,
  NoCapacityError,
  ProvisioningError,
} from '../errors.js';
import { classifyBackendFailure, describeBackendFailure } from './backend-failure-kind.js';

describe('classifyBackendFailure', () => {
  it.each([
    ['a capacity error', new NoCapacityError('no g5.xlarge in us-east-1'), 'no-capacity'],
    ['a refused key', new BackendAuthenticationError('AuthFailure'), 'authentication'],
    ['invalid credentials', new InvalidCredentialsError(), 'authentication'],
    ['an API call answered 401', new BackendApiCallError('401', { statusCode: 401 }), 'authentication'],
    ['an API call answered 403', new BackendApiCallError('403', { statusCode: 403 }), 'authentication'],
    ['throttling', new BackendRateLimitError('RequestLimitExceeded'), 'rate-limit'],
    ['an API call answered 429', new BackendApiCallError('429', { statusCode: 429 }), 'rate-limit'],
    ['an API call answered 500', new BackendApiCallError('500', { statusCode: 500 }), 'error'],
    ['a transport error', new BackendApiCallError('reset'), 'error'],
    ['a provisioning error', new ProvisioningError('stopped'), 'error'],
    ['a plain backend error', new BackendError('x'), 'error'],
    ['anything else', new TypeError('x'), 'error'],
  ])('%s is %s', (_what, error, kind) => {
    expect(classifyBackendFailure(error)).toBe(kind);
  });

  it('recognises an error of another copy of core by its marker', () => {
    const foreign = Object.assign(new Error('denied'), {
      [Symbol.for('@dstack/core/BackendAuthenticationError')]: true,
    });
    expect(classifyBackendFailure(foreign)).toBe('authentication');
  });

  it('says which backend failed how', () => {
    expect(describeBackendFailure('aws', 'authentication', 'AuthFailure: bad key')).toBe(
      'backend aws: authentication failed: AuthFailure: bad key',
    );
    expect(describeBackendFailure('gcp', 'rate-limit', '429')).toBe('backend gcp: rate limited: 429');
  });
});
