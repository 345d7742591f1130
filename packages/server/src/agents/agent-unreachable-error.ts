import { DstackError } from '@dstack/core';

/**
 * The server could not reach an agent (shim or runner) of an instance: the SSH
 * connection failed (refused, timed out, key rejected), the instance has no
 * hostname yet, or the port forward could not be opened. Pipelines count these
 * to decide when an instance is unreachable.
 */
export class AgentUnreachableError extends DstackError {
  static override readonly marker: string = '@dstack/server/AgentUnreachableError';
  override readonly name: string = 'AgentUnreachableError';
  /** The host the server tried to reach (the SSH target, or the agent itself in direct mode). */
  readonly host: string | null;
  /** The port it tried: the SSH port, or the agent port in direct mode. */
  readonly port: number | null;

  constructor(
    message: string,
    details: { host?: string | null; port?: number | null; cause?: unknown } = {},
  ) {
    super(message, { cause: details.cause });
    this.host = details.host ?? null;
    this.port = details.port ?? null;
  }
}
