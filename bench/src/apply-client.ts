/**
 * Applies many runs from a process of its own, as users' CLIs do: a client inside the server's
 * process would spend the server's CPU on its own requests (the 500 applies of the throughput
 * bench cost that process about a third of a second) and wait on the server's busy event loop.
 */
import { startClientProcess } from './client-process.js';

/**
 * The client: reads its task from standard input, applies the runs `concurrency` at a time (the
 * workers take the servers' URLs in turn, as behind a load balancer) and prints, as JSON, when
 * each apply was sent, in milliseconds since the epoch (`performance.timeOrigin` based).
 */
const CLIENT_SCRIPT = `
let input = '';
for await (const chunk of process.stdin) input += chunk;
const { urls, token, names, configuration, concurrency } = JSON.parse(input);
const sentAt = {};
const queue = [...names];
await Promise.all(Array.from({ length: concurrency }, async (_, worker) => {
  const url = urls[worker % urls.length] + '/api/project/main/runs/apply';
  for (let name = queue.shift(); name; name = queue.shift()) {
    sentAt[name] = performance.timeOrigin + performance.now();
    const response = await fetch(url, {
      method: 'POST',
      headers: { authorization: 'Bearer ' + token, 'content-type': 'application/json' },
      body: JSON.stringify({ plan: { run_spec: { configuration: { ...configuration, name } } } }),
    });
    const text = await response.text();
    if (!response.ok) throw new Error('apply ' + name + ': ' + response.status + ' ' + text);
  }
}));
process.stdout.write(JSON.stringify(sentAt));
`;

export interface ApplyClientOptions {
  /** The servers' base URLs; worker N applies through `urls[N % urls.length]`. */
  urls: readonly string[];
  token: string;
  names: readonly string[];
  /** Every run's configuration but its name. */
  configuration: Record<string, unknown>;
  concurrency: number;
}

/** The moment (ms since the epoch, as `epochNow()` gives it) each run's apply was sent. */
export async function applyFromClientProcess(options: ApplyClientOptions): Promise<Map<string, number>> {
  const client = startClientProcess(CLIENT_SCRIPT, 'the apply client');
  client.child.stdin.end(JSON.stringify(options));
  return new Map(Object.entries((await client.output) as Record<string, number>));
}

/** Now, in milliseconds since the epoch, on the clock the apply client reports. */
export function epochNow(): number {
  return performance.timeOrigin + performance.now();
}
