/**
 * What the Vast.ai emulator's tests share: API calls as a backend makes them (fetch with a
 * Bearer key, JSON bodies), the rental body dstack sends, the query gpuhunt and dstack send,
 * and a manual clock.
 */
import type { VastaiEmulator } from './vastai-emulator.js';

export { type ManualClock, manualClock } from '../aws/aws-emulator.test.helpers.js';

export interface VastaiAnswer {
  status: number;
  contentType: string | null;
  // biome-ignore lint/suspicious/noExplicitAny: answers are read field by field in assertions
  body: any;
}

/** A call to `<emulator>/api/…` with the emulator's key (or `key`; null sends none). */
export async function vastai(
  emulator: VastaiEmulator,
  method: string,
  path: string,
  body?: unknown,
  key: string | null = emulator.apiKey,
): Promise<VastaiAnswer> {
  const headers: Record<string, string> = {};
  if (key !== null) headers.authorization = `Bearer ${key}`;
  if (body !== undefined) headers['content-type'] = 'application/json';
  const response = await fetch(`${emulator.url}${path}`, {
    method,
    headers,
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await response.text();
  const contentType = response.headers.get('content-type');
  return {
    status: response.status,
    contentType,
    body: contentType?.includes('json') ? JSON.parse(text) : text,
  };
}

/** The search body dstack's catalog sends through gpuhunt (community cloud allowed), ordered by score. */
export function dstackSearchQuery(extra: Record<string, unknown> = {}): Record<string, unknown> {
  return {
    num_gpus: { gte: 1 },
    rentable: { eq: true },
    rented: { eq: false },
    direct_port_count: { gte: 1 },
    reliability2: { gte: 0.9 },
    inet_down: { gt: 128 },
    verified: { eq: true },
    cuda_max_good: { gte: 12.8 },
    compute_cap: { gte: 600 },
    order: [['score', 'desc']],
    ...extra,
  };
}

/** The rental body dstack's Vast.ai client sends (`api_client.create_instance`). */
export function dstackRentBody(options: {
  image: string;
  label: string;
  command: string;
  bid?: number | null;
  disk?: number;
}) {
  return {
    client_id: 'me',
    image: options.image,
    price: options.bid ?? null,
    disk: options.disk ?? 100,
    label: options.label,
    env: { '-p 10022:10022': '1' },
    user: 'root',
    onstart: '/bin/sh',
    args: ['-c', options.command],
    runtype: 'args',
    image_login: null,
    python_utf8: false,
    lang_utf8: false,
    use_jupyter_lab: false,
    jupyter_dir: null,
    create_from: null,
    force: false,
  };
}
