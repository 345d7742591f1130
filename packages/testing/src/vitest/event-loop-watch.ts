/**
 * A setup file of every package's test project (package-project.ts): names a test file that
 * blocked its worker's event loop for long. vitest's worker answers the main process over RPC
 * with a 60 s deadline that cannot be configured; a worker busy in synchronous work that long (an
 * `execFileSync` of pip or tsc on a loaded machine) fails the whole run with `[vitest-worker]:
 * Timeout calling "onTaskUpdate"`, which names no file. This warning names it, well before.
 */
import { afterAll } from 'vitest';

/** Blocks longer than this are reported: half of vitest's RPC deadline. */
const LONG_BLOCK_MS = 30_000;
const TICK_MS = 1_000;

// A tick that comes late by more than its interval measures a block (Node's own histogram,
// monitorEventLoopDelay, misses one that starts before its first tick).
let lastTick = performance.now();
let longestBlockMs = 0;
const ticks = setInterval(() => {
  const now = performance.now();
  longestBlockMs = Math.max(longestBlockMs, now - lastTick - TICK_MS);
  lastTick = now;
}, TICK_MS).unref();

afterAll((suite) => {
  clearInterval(ticks);
  longestBlockMs = Math.max(longestBlockMs, performance.now() - lastTick - TICK_MS);
  if (longestBlockMs > LONG_BLOCK_MS) {
    const file = 'filepath' in suite ? suite.filepath : suite.name;
    console.warn(
      `${file} blocked its worker's event loop for ${(longestBlockMs / 1000).toFixed(1)} s: synchronous work ` +
        'that long fails vitest runs ("Timeout calling onTaskUpdate" at 60 s); make it asynchronous',
    );
  }
});
