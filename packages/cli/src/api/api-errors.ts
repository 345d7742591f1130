import { DstackError } from '@dstack/core';

/** One problem reported by the server, with the path of the offending request field if any. */
export interface ApiErrorDetail {
  message: string;
  code: string;
  fields: ReadonlyArray<ReadonlyArray<string | number>>;
}

/** The server answered with a non-2xx status. */
export class ServerApiError extends DstackError {
  override readonly name = 'ServerApiError';
  readonly statusCode: number;
  readonly endpoint: string;
  readonly details: readonly ApiErrorDetail[];

  constructor(endpoint: string, statusCode: number, details: readonly ApiErrorDetail[]) {
    super(details.map((detail) => detail.message).join('; ') || `HTTP ${statusCode}`);
    this.endpoint = endpoint;
    this.statusCode = statusCode;
    this.details = details;
  }

  static override isInstance(error: unknown): error is ServerApiError {
    return DstackError.isInstance(error) && error.name === 'ServerApiError';
  }
}

/** The token was rejected (HTTP 401). */
export class InvalidTokenError extends DstackError {
  override readonly name = 'InvalidTokenError';
  readonly serverUrl: string;
  readonly projectName: string;

  constructor(serverUrl: string, projectName: string) {
    super(`the server at ${serverUrl} rejected the token of project ${projectName}`);
    this.serverUrl = serverUrl;
    this.projectName = projectName;
  }

  static override isInstance(error: unknown): error is InvalidTokenError {
    return DstackError.isInstance(error) && error.name === 'InvalidTokenError';
  }
}

/** Nothing answers at the server URL (connection refused, unknown host, timeout). */
export class ServerUnreachableError extends DstackError {
  override readonly name = 'ServerUnreachableError';
  readonly serverUrl: string;

  constructor(serverUrl: string, cause: unknown) {
    super(`cannot reach the dstack server at ${serverUrl}`, { cause });
    this.serverUrl = serverUrl;
  }

  static override isInstance(error: unknown): error is ServerUnreachableError {
    return DstackError.isInstance(error) && error.name === 'ServerUnreachableError';
  }
}

/** The server answered 2xx with a body that does not match the API models. */
export class UnexpectedResponseError extends DstackError {
  override readonly name = 'UnexpectedResponseError';

  static override isInstance(error: unknown): error is UnexpectedResponseError {
    return DstackError.isInstance(error) && error.name === 'UnexpectedResponseError';
  }
}
