import type { WaitNotice } from '../api/client.js';
import type { CliIo } from '../io.js';
import { createProgressLine } from './progress.js';

/**
 * `⠋ Waiting for the server at URL…` on stderr while the server is slow, erased when it
 * answers. Only on a terminal: in a pipe or a log it would be noise in the output of a command
 * that worked.
 */
export function createWaitNotice(io: CliIo, serverUrl: string): WaitNotice | undefined {
  if (!io.stderrIsTerminal) return undefined;
  const line = createProgressLine(io, 'stderr');
  return {
    show: () => line.update(`Waiting for the server at ${serverUrl}…`),
    hide: () => line.clear(),
  };
}
