/** OCI's error document, `{"code", "message"}`, with its status and an `opc-request-id`. */
import { randomUUID } from 'node:crypto';
import { EmulatorHttpError, json } from '../../emulator/emulator-responses.js';

export class OciApiError extends EmulatorHttpError {
  constructor(
    status: number,
    readonly code: string,
    message: string,
  ) {
    super(
      json({ code, message }, status, { 'opc-request-id': randomUUID().replaceAll('-', '').toUpperCase() }),
      `${code}: ${message}`,
    );
  }
}

export function notAuthenticated(): OciApiError {
  return new OciApiError(
    401,
    'NotAuthenticated',
    'The required information to complete authentication was not provided or was incorrect.',
  );
}
