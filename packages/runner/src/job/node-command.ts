import { posix } from 'node:path';
import { isLoaderFileName, loaderArguments } from '../portable-runtime/portable-runtime-layout.js';

/** A command line: what to execute and its first arguments. */
export interface NodeCommand {
  command: string;
  args: string[];
}

/**
 * How to start another process of the node running this code. Usually `process.execPath`; but in
 * a portable runtime node was started by its loader (`<lib>/ld-linux-x86-64.so.2 --library-path
 * <lib> <node> …`), so `process.execPath` (from /proc/self/exe) is the loader, and node's own path
 * is the program name the loader passed on (`process.argv0`). The libraries sit beside the loader.
 */
export function currentNodeCommand(
  running: { execPath: string; argv0: string } = { execPath: process.execPath, argv0: process.argv0 },
): NodeCommand {
  const { execPath, argv0 } = running;
  if (!isLoaderFileName(posix.basename(execPath)) || !posix.isAbsolute(argv0) || argv0 === execPath) {
    return { command: execPath, args: [] };
  }
  return { command: execPath, args: [...loaderArguments(execPath, posix.dirname(execPath)), argv0] };
}
