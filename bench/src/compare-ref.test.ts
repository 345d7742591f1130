import { expect, it } from 'vitest';
import { parseThroughputOutput } from './compare-ref.js';

it('reads the figures of the throughput line the bench prints', () => {
  const output = [
    'node v20.20.2, linux/x64',
    '  500 runs at once, instant backend: 15.9 runs/s to done (31.5 s; target >= 50: MISSED), apply→running p50 15177 ms, p99 28873 ms, peak RSS 411 MB, CPU 14.7 s (server and bench in one process; the shim process: peak RSS 108 MB, CPU 3.4 s)',
  ].join('\n');
  expect(parseThroughputOutput(output)).toEqual({
    runsPerSecond: 15.9,
    toRunningP50Ms: 15177,
    cpuSeconds: 14.7,
  });
});

it('says so, quoting the output, when there is no throughput line', () => {
  expect(() => parseThroughputOutput('Error: the server did not start')).toThrow(
    /no throughput line.*\n.*did not start/,
  );
});
