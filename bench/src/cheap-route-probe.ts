/**
 * Times a cheap API route from its own process, as a user's client sees it: a client inside the
 * server's process would wait on the server's busy event loop for its own reads and writes, and
 * count that as the server's latency.
 */
import { startClientProcess } from './client-process.js';

/** The client: calls the route one call at a time, then prints the milliseconds of each as JSON. */
const PROBE_SCRIPT = `
const { url, token, pauseMs, maxCalls, body } = JSON.parse(process.env.PROBE);
let stopped = false;
process.stdin.on('end', () => { stopped = true; });
process.stdin.resume();
const timings = [];
while (!stopped && (maxCalls === 0 || timings.length < maxCalls)) {
  const started = performance.now();
  const response = await fetch(url, {
    method: 'POST',
    headers: { authorization: 'Bearer ' + token, 'content-type': 'application/json' },
    body: body ?? '{}',
  });
  await response.text();
  if (!response.ok) throw new Error(url + ': ' + response.status);
  timings.push(performance.now() - started);
  await new Promise((resolve) => setTimeout(resolve, pauseMs));
}
process.stdout.write(JSON.stringify(timings));
process.exit(0);
`;

export interface CheapRouteProbeOptions {
  url: string;
  token: string;
  /** The pause between two calls. */
  pauseMs: number;
  /** Stop after this many calls; 0: only when `stop()` is called. */
  maxCalls: number;
  /** The JSON body of each call; default `{}`. */
  body?: string;
}

export interface CheapRouteProbe {
  /** Each call's milliseconds, once the probe has ended (after `maxCalls`, or `stop()`). */
  calls: Promise<number[]>;
  /** Ends the calls (if still going) and resolves with each call's milliseconds. */
  stop(): Promise<number[]>;
}

export function startCheapRouteProbe(options: CheapRouteProbeOptions): CheapRouteProbe {
  const { child, output } = startClientProcess(PROBE_SCRIPT, 'the cheap-route probe', {
    ...process.env,
    PROBE: JSON.stringify(options),
  });
  // Ending the input of a probe that already stopped by itself must not fail.
  child.stdin.on('error', () => {});
  const exited = output as Promise<number[]>;
  return {
    calls: exited,
    stop() {
      child.stdin.end();
      return exited;
    },
  };
}
