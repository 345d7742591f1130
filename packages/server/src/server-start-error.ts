import { DstackError } from '@dstack/core';

/**
 * The server cannot start: its port is taken, or its SQLite database is in use by another
 * server. The message is one line for the user (`dstack server` and `dstack-server` print it
 * as `error: <message>`).
 */
export class ServerStartError extends DstackError {
  static override readonly marker: string = '@dstack/server/ServerStartError';
  override readonly name = 'ServerStartError';
}
