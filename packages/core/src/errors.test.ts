import { findAccelerators } from '@dstack/catalog';
import { describe, expect, it } from 'vitest';
import {
  BackendApiCallError,
  BackendAuthenticationError,
  BackendError,
  BackendPluginError,
  BackendRateLimitError,
  ConfigurationError,
  DstackError,
  InvalidCredentialsError,
  NoCapacityError,
  NotImplementedError,
  NotYetTerminatedError,
  ProvisioningError,
  ResourceNotFoundError,
  ServerClientError,
  UnsupportedCapabilityError,
} from './errors.js';

describe('errors', () => {
  it('recognises subclasses by marker, not by instanceof', () => {
    const error = new ConfigurationError('bad', { path: ['resources', 'gpu'], line: 3, column: 5 });
    expect(DstackError.isInstance(error)).toBe(true);
    expect(ConfigurationError.isInstance(error)).toBe(true);
    expect(ConfigurationError.isInstance(new DstackError('x'))).toBe(false);
    expect(ConfigurationError.isInstance({ name: 'ConfigurationError' })).toBe(false);
  });

  it('reaches the catalog through the workspace source condition', () => {
    expect(findAccelerators({ names: ['a100'] }).map((a) => a.memory)).toEqual([40, 80]);
  });

  it('gives every error a stable name and an isInstance that follows the hierarchy', () => {
    const cases = [
      [new BackendError('x'), 'BackendError', [DstackError, BackendError]],
      [new NoCapacityError(), 'NoCapacityError', [DstackError, BackendError, NoCapacityError]],
      [new ProvisioningError('stopped'), 'ProvisioningError', [BackendError, ProvisioningError]],
      [new NotYetTerminatedError(), 'NotYetTerminatedError', [BackendError, NotYetTerminatedError]],
      [
        new BackendAuthenticationError('AuthFailure'),
        'BackendAuthenticationError',
        [BackendError, BackendAuthenticationError],
      ],
      [
        new BackendRateLimitError('RequestLimitExceeded'),
        'BackendRateLimitError',
        [BackendError, BackendRateLimitError],
      ],
      [
        new BackendApiCallError('x', { statusCode: 500 }),
        'BackendApiCallError',
        [BackendError, BackendApiCallError],
      ],
      [new ServerClientError('x'), 'ServerClientError', [DstackError, ServerClientError]],
      [new ResourceNotFoundError(), 'ResourceNotFoundError', [ServerClientError, ResourceNotFoundError]],
      [
        new InvalidCredentialsError(),
        'InvalidCredentialsError',
        [ServerClientError, InvalidCredentialsError],
      ],
      [new NotImplementedError('runJob'), 'NotImplementedError', [DstackError, NotImplementedError]],
      [new UnsupportedCapabilityError('volumes'), 'UnsupportedCapabilityError', [UnsupportedCapabilityError]],
      [new BackendPluginError('x'), 'BackendPluginError', [BackendPluginError]],
    ] as const;
    const all = [
      BackendError,
      NoCapacityError,
      ProvisioningError,
      NotYetTerminatedError,
      BackendAuthenticationError,
      BackendRateLimitError,
      BackendApiCallError,
      ServerClientError,
      ResourceNotFoundError,
      InvalidCredentialsError,
      NotImplementedError,
      UnsupportedCapabilityError,
      BackendPluginError,
    ];
    for (const [error, name, classes] of cases) {
      expect(error.name).toBe(name);
      expect(error).toBeInstanceOf(Error);
      for (const cls of all) {
        expect(cls.isInstance(error), `${cls.name}.isInstance(${name})`).toBe(
          (classes as readonly unknown[]).includes(cls),
        );
      }
      expect(DstackError.isInstance(error)).toBe(true);
    }
  });

  it('recognises an error from another copy of core by its Symbol.for markers', () => {
    // What a NoCapacityError built by a second copy of @dstack/core looks like.
    const copy = Object.assign(new Error('no capacity'), {
      name: 'NoCapacityError',
      [Symbol.for('@dstack/core/DstackError')]: true,
      [Symbol.for('@dstack/core/BackendError')]: true,
      [Symbol.for('@dstack/core/NoCapacityError')]: true,
    });
    expect(NoCapacityError.isInstance(copy)).toBe(true);
    expect(BackendError.isInstance(copy)).toBe(true);
    expect(DstackError.isInstance(copy)).toBe(true);
    expect(ProvisioningError.isInstance(copy)).toBe(false);
    expect(NoCapacityError.isInstance({ name: 'NoCapacityError' })).toBe(false);
    expect(NoCapacityError.isInstance(null)).toBe(false);
  });

  it('gives a subclass that declares its marker its own isInstance, within the hierarchy', () => {
    class QuotaError extends NoCapacityError {
      static override readonly marker: string = '@dstack/test/QuotaError';
      override readonly name: string = 'QuotaError';
    }
    const quota = new QuotaError('quota exceeded');
    expect(QuotaError.isInstance(quota)).toBe(true);
    expect(NoCapacityError.isInstance(quota)).toBe(true);
    expect(BackendError.isInstance(quota)).toBe(true);
    expect(DstackError.isInstance(quota)).toBe(true);
    expect(QuotaError.isInstance(new NoCapacityError())).toBe(false);
    expect(ProvisioningError.isInstance(quota)).toBe(false);
    // From another copy of the package: the markers alone decide.
    const copy = Object.assign(new Error('quota'), {
      [Symbol.for('@dstack/core/DstackError')]: true,
      [Symbol.for('@dstack/test/QuotaError')]: true,
    });
    expect(QuotaError.isInstance(copy)).toBe(true);
    expect(NoCapacityError.isInstance(copy)).toBe(false);
  });

  it('recognises a ConfigurationError from another copy of core by its marker', () => {
    const copy = Object.assign(new Error('bad'), {
      name: 'ConfigurationError',
      [Symbol.for('@dstack/core/DstackError')]: true,
      [Symbol.for('@dstack/core/ConfigurationError')]: true,
    });
    expect(ConfigurationError.isInstance(copy)).toBe(true);
    expect(ServerClientError.isInstance(copy)).toBe(false);
  });

  it('refuses isInstance on a subclass without its own marker, which would answer for its parent', () => {
    class Unmarked extends BackendError {}
    expect(() => Unmarked.isInstance(new BackendError('x'))).toThrow(
      new TypeError('Unmarked must declare its own static marker to have isInstance'),
    );
    // Its instances still carry the markers of the classes above it.
    expect(BackendError.isInstance(new Unmarked('x'))).toBe(true);
  });

  it('keeps the cause', () => {
    const cause = new Error('socket hang up');
    expect(new BackendApiCallError('call failed', { cause }).cause).toBe(cause);
    expect(new NoCapacityError('none', { cause }).cause).toBe(cause);
  });

  it('derives isRetryable from the status code unless told', () => {
    expect(new BackendApiCallError('x', { statusCode: 429 }).isRetryable).toBe(true);
    expect(new BackendApiCallError('x', { statusCode: 503 }).isRetryable).toBe(true);
    expect(new BackendApiCallError('x', { statusCode: 400 }).isRetryable).toBe(false);
    expect(new BackendApiCallError('x').isRetryable).toBe(true);
    expect(new BackendApiCallError('x', { statusCode: 503, isRetryable: false }).isRetryable).toBe(false);
    expect(new BackendApiCallError('x', { statusCode: 404 }).statusCode).toBe(404);
  });

  it('names the bad credential fields', () => {
    const error = new InvalidCredentialsError([['creds', 'api_key']]);
    expect(error.fields).toEqual([['creds', 'api_key']]);
    expect(error.code).toBe('invalid_credentials');
    expect(error.message).toBe('Invalid credentials: creds.api_key');
    expect(new ResourceNotFoundError('Run x not found').code).toBe('resource_not_exists');
  });

  it('says which method is not implemented and what it must do', () => {
    const error = new NotImplementedError('AwsCompute.terminateInstance');
    expect(error.method).toBe('AwsCompute.terminateInstance');
    expect(error.message).toBe(
      'AwsCompute.terminateInstance() is not implemented: it must terminate the instance and succeed when it is already gone',
    );
    expect(new NotImplementedError('custom', { description: 'must do X' }).message).toBe(
      'custom() is not implemented: it must do X',
    );
    expect(new NotImplementedError('unknownMethod').message).toBe('unknownMethod() is not implemented');
  });

  it('names the capability and backend when unsupported', () => {
    const error = new UnsupportedCapabilityError('gateways', { backendType: 'vastai' });
    expect(error.message).toBe('Backend "vastai" does not support the "gateways" capability');
    expect(error.capability).toBe('gateways');
  });
});
