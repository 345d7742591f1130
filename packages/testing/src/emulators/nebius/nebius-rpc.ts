/**
 * The gRPC side every Nebius service of the emulator shares: errors as Nebius answers them, its
 * resource ids and timestamps, and the shape of a decoded request and of a service's handlers.
 */
import { randomBytes } from 'node:crypto';
import type * as grpc from '@grpc/grpc-js';

/** A gRPC error as Nebius answers it. */
export class RpcError extends Error {
  constructor(
    readonly code: grpc.status,
    message: string,
  ) {
    super(message);
  }
}

export function nebiusId(prefix: string): string {
  return `${prefix}-e00${randomBytes(9).toString('hex').slice(0, 17)}`;
}

export function timestamp(ms: number): { seconds: number; nanos: number } {
  return { seconds: Math.floor(ms / 1000), nanos: (ms % 1000) * 1e6 };
}

// biome-ignore lint/suspicious/noExplicitAny: grpc-js hands over proto-loader's decoded messages untyped; each handler checks what it reads
export type NebiusRequest = Record<string, any>;

/** A service's unary methods by name. */
export type NebiusMethods = Record<string, (request: NebiusRequest) => unknown>;
