/**
 * Google API errors as Compute Engine and the Billing Catalog answer them:
 * `{"error":{"code","message","errors":[{"message","domain","reason"}],"status"}}`, which the
 * client libraries (and dstack's `google.api_core.exceptions`) map by HTTP code and `reason`.
 */
import type { EmulatorResponse } from '../../emulator/emulator-responses.js';
import { EmulatorHttpError, json } from '../../emulator/emulator-responses.js';

/** The canonical `status` of each HTTP code Google APIs answer. */
const STATUS_OF_CODE: Readonly<Record<number, string>> = {
  400: 'INVALID_ARGUMENT',
  401: 'UNAUTHENTICATED',
  403: 'PERMISSION_DENIED',
  404: 'NOT_FOUND',
  409: 'ALREADY_EXISTS',
  429: 'RESOURCE_EXHAUSTED',
  500: 'INTERNAL',
  503: 'UNAVAILABLE',
};

export class GcpApiError extends EmulatorHttpError {
  constructor(
    readonly code: number,
    readonly reason: string,
    message: string,
    readonly domain = 'global',
  ) {
    super(gcpErrorResponse(code, reason, message, domain), message);
  }
}

export function gcpErrorResponse(
  code: number,
  reason: string,
  message: string,
  domain = 'global',
): EmulatorResponse {
  return json(
    {
      error: {
        code,
        message,
        errors: [{ message, domain, reason }],
        ...(STATUS_OF_CODE[code] ? { status: STATUS_OF_CODE[code] } : {}),
      },
    },
    code,
  );
}

/** 404 `notFound` for a resource path such as `projects/P/zones/Z/instances/N`. */
export function notFound(resource: string): GcpApiError {
  return new GcpApiError(404, 'notFound', `The resource '${resource}' was not found`);
}

/** 409 `alreadyExists`, what a second insert of the same name answers. */
export function alreadyExists(resource: string): GcpApiError {
  return new GcpApiError(409, 'alreadyExists', `The resource '${resource}' already exists`);
}

/** 400 `invalid` naming the field. */
export function invalidField(field: string, detail: string): GcpApiError {
  return new GcpApiError(400, 'invalid', `Invalid value for field '${field}': ${detail}`);
}
