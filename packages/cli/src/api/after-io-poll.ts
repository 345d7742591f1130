/**
 * Runs `load` once the event loop has been through its I/O poll, and resolves with its result. A
 * command that starts a request and loads code it needs for the answer (the answer's schemas, a
 * table's code) calls it so that the request is written to its socket first: the bundle runs a
 * module in the same turn it is imported, and loading it at once would keep the server waiting
 * for the request while zod builds schemas.
 */
export function afterIoPoll<T>(load: () => Promise<T>): Promise<T> {
  return new Promise<void>((resolve) => setImmediate(resolve)).then(load);
}
