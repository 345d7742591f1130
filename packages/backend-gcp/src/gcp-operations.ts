/**
 * Waiting on Compute operations of a zone or a region (disks, attachments, resource policies),
 * as the Python client's `ExtendedOperation.result()` does for dstack: poll until DONE, then
 * raise the operation's error.
 */
import { BackendError } from '@dstack/core';
import type { GcpComputeApi } from './gcp-api.js';

export interface GcpOperationResource {
  name: string;
  status: 'PENDING' | 'RUNNING' | 'DONE';
  targetId?: string;
  targetLink?: string;
  operationType?: string;
  error?: { errors?: { code?: string; message?: string }[] };
  httpErrorStatusCode?: number;
}

/** An operation that ended with an error (its first error's code and message). */
export class GcpOperationError extends BackendError {
  override readonly name: string = 'GcpOperationError';
  constructor(
    readonly code: string,
    message: string,
  ) {
    super(message);
  }
}

export interface WaitForOperationOptions {
  /** How long to wait before giving up. Default 300 s. */
  readonly timeoutMs?: number;
  /** Pause between reads. Default 1000 ms. */
  readonly pollIntervalMs?: number;
}

/**
 * The operation once DONE; its error as `GcpOperationError` (`what` says what it was doing), and a
 * `BackendError` when it outlasts `timeoutMs`. `scope` is `zones/{z}` or `regions/{r}`.
 */
export async function waitForGcpOperation(
  api: GcpComputeApi,
  scope: string,
  operation: GcpOperationResource,
  what: string,
  options: WaitForOperationOptions = {},
): Promise<GcpOperationResource> {
  const deadline = Date.now() + (options.timeoutMs ?? 300_000);
  let current = operation;
  while (current.status !== 'DONE') {
    if (Date.now() > deadline)
      throw new BackendError(`${what}: operation ${operation.name} did not finish in time`);
    await new Promise((resolve) => setTimeout(resolve, options.pollIntervalMs ?? 1000));
    current = await api.get<GcpOperationResource>(`${scope}/operations/${operation.name}`);
  }
  const first = current.error?.errors?.[0];
  if (current.error) {
    throw new GcpOperationError(
      first?.code ?? 'UNKNOWN',
      `${what} failed: ${first?.code ?? 'UNKNOWN'}: ${first?.message ?? 'the operation failed'}`,
    );
  }
  return current;
}
