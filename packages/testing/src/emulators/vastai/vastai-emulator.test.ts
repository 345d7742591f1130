/**
 * The Vast.ai emulator's API without Docker (rentals get made-up ports), stepped with a manual
 * clock: search, rent, show, list, destroy, keys, the status timeline and the book.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { startVastaiEmulator, type VastaiEmulator, type VastaiEmulatorOptions } from './vastai-emulator.js';
import {
  dstackRentBody,
  dstackSearchQuery,
  type ManualClock,
  manualClock,
  vastai,
} from './vastai-emulator.test.helpers.js';

const H100_ASK = 21_000_101;
const RTX4090_ASK = 21_000_103;

let emulator: VastaiEmulator | undefined;
let clock: ManualClock;

async function start(options: VastaiEmulatorOptions = {}): Promise<VastaiEmulator> {
  clock = manualClock();
  emulator = await startVastaiEmulator({
    clock: clock.read,
    timeline: { loadingAfterMs: 1000, runningAfterMs: 3000 },
    ...options,
  });
  return emulator;
}

afterEach(async () => {
  await emulator?.close();
  emulator = undefined;
});

function rentBody(overrides: Partial<Parameters<typeof dstackRentBody>[0]> = {}) {
  return dstackRentBody({ image: 'dstack-test/anything:1', label: 'run-1-0', command: 'true', ...overrides });
}

describe('Vast.ai emulator search', () => {
  it('answers the query dstack sends with the asks that pass every filter, best score first', async () => {
    const vast = await start();

    const answer = await vastai(vast, 'POST', '/api/v0/bundles/', dstackSearchQuery(), null);

    expect(answer.status).toBe(200);
    const offers = answer.body.offers as { id: number; score: number; verified: boolean }[];
    const ids = offers.map((offer) => offer.id);
    // Unverified (107), unreliable (108), old CUDA (109) and portless (110) asks are filtered out.
    expect(ids).not.toContain(21_000_107);
    expect(ids).not.toContain(21_000_108);
    expect(ids).not.toContain(21_000_109);
    expect(ids).not.toContain(21_000_110);
    expect(ids).toContain(H100_ASK);
    const scores = offers.map((offer) => offer.score);
    expect(scores).toEqual([...scores].sort((left, right) => right - left));
  });

  it('filters by GPU name list, memory in MB and datacenter, and orders by price', async () => {
    const vast = await start();

    const answer = await vastai(vast, 'POST', '/api/v0/bundles/', {
      gpu_name: { in: ['RTX 4090', 'RTX 3090'] },
      gpu_ram: { gte: 22_855 },
      cpu_ram: { gte: 32_000 },
      datacenter: { eq: true },
      order: [['dph_base', 'asc']],
    });

    const offers = answer.body.offers as { id: number; gpu_name: string; dph_base: number }[];
    expect(offers.map((offer) => offer.gpu_name).every((name) => name === 'RTX 4090')).toBe(true);
    expect(offers.map((offer) => offer.dph_base)).toEqual(
      [...offers.map((offer) => offer.dph_base)].sort((left, right) => left - right),
    );
    expect(offers.map((offer) => offer.id)).not.toContain(21_000_106);
  });

  it('compares gpuhunt string compute capabilities numerically and matches countries', async () => {
    const vast = await start();

    const answer = await vastai(vast, 'POST', '/api/v0/bundles/', {
      compute_capability: { gte: '900' },
      geolocation: { in: ['US'] },
    });

    expect(answer.body.offers.map((offer: { id: number }) => offer.id)).toEqual([21_000_102]);
  });

  it('prices allocated storage and honours the limit; GET ?q= and PUT /search/asks/ search too', async () => {
    const vast = await start();

    const posted = await vastai(vast, 'POST', '/api/v0/bundles/', {
      id: { eq: H100_ASK },
      allocated_storage: 720,
      limit: 1,
    });
    const query = encodeURIComponent(JSON.stringify({ limit: 2 }));
    const got = await vastai(vast, 'GET', `/api/v0/bundles/?q=${query}`, undefined, null);
    const put = await vastai(vast, 'PUT', '/api/v0/search/asks/', {
      select_cols: ['*'],
      q: { id: { eq: RTX4090_ASK } },
    });

    const offer = posted.body.offers[0];
    expect(offer.dph_total).toBeCloseTo(offer.dph_base + (720 * offer.storage_cost) / 720, 6);
    expect(got.body.offers).toHaveLength(2);
    expect(put.body.offers.map((each: { id: number }) => each.id)).toEqual([RTX4090_ASK]);
  });

  it('refuses an unknown field or operator with invalid_args naming it', async () => {
    const vast = await start();

    const field = await vastai(vast, 'POST', '/api/v0/bundles/', { gpu_nmae: { eq: 'RTX 4090' } });
    const operator = await vastai(vast, 'POST', '/api/v0/bundles/', { num_gpus: { gteq: 1 } });

    expect(field.status).toBe(400);
    expect(field.body).toMatchObject({ success: false, error: 'invalid_args' });
    expect(field.body.msg).toContain('gpu_nmae');
    expect(operator.body.msg).toContain('num_gpus.gteq');
  });
});

describe('Vast.ai emulator rentals', () => {
  it('rents an ask: the ask leaves the book, the instance goes null → loading → running with late ports', async () => {
    const vast = await start();

    const rented = await vastai(vast, 'PUT', `/api/v0/asks/${RTX4090_ASK}/`, rentBody());
    expect(rented.status).toBe(200);
    expect(rented.body).toEqual({ success: true, new_contract: expect.any(Number) });
    const id = rented.body.new_contract as number;
    await vast.settle();

    const first = (await vastai(vast, 'GET', `/api/v0/instances/${id}/?owner=me`)).body.instances;
    expect(first).toMatchObject({
      id,
      actual_status: null,
      intended_status: 'running',
      label: 'run-1-0',
      public_ipaddr: null,
    });
    expect(first.ports).toEqual({});

    clock.advance(1000);
    const loading = (await vastai(vast, 'GET', `/api/v0/instances/${id}/`)).body.instances;
    expect(loading.actual_status).toBe('loading');
    expect(loading.public_ipaddr).toBe('127.0.0.1 ');
    expect(loading.ports).toEqual({});

    clock.advance(2000);
    const running = (await vastai(vast, 'GET', `/api/v0/instances/${id}/`)).body.instances;
    expect(running.actual_status).toBe('running');
    expect(running.ports['10022/tcp']).toEqual([
      { HostIp: '127.0.0.1', HostPort: expect.stringMatching(/^\d+$/) },
    ]);

    const search = await vastai(vast, 'POST', '/api/v0/bundles/', { id: { eq: RTX4090_ASK } });
    expect(search.body.offers).toEqual([]);
    const again = await vastai(vast, 'PUT', `/api/v0/asks/${RTX4090_ASK}/`, rentBody());
    expect(again.status).toBe(410);
    expect(again.body).toMatchObject({ success: false, error: 'no_such_ask', ask_id: RTX4090_ASK });
  });

  it('lists rentals (v0 and paged v1) so a backend finds one by label', async () => {
    const vast = await start();
    for (const [ask, label] of [
      [H100_ASK, 'a'],
      [RTX4090_ASK, 'b'],
      [21_000_104, 'c'],
    ] as const) {
      await vastai(vast, 'PUT', `/api/v0/asks/${ask}/`, rentBody({ label }));
    }

    const v0 = await vastai(vast, 'GET', '/api/v0/instances/?owner=me');
    const page1 = await vastai(vast, 'GET', '/api/v1/instances/?limit=2');
    const page2 = await vastai(
      vast,
      'GET',
      `/api/v1/instances/?limit=2&after_token=${page1.body.next_token}`,
    );

    expect(v0.body.instances.map((each: { label: string }) => each.label)).toEqual(['a', 'b', 'c']);
    expect(page1.body.instances.map((each: { label: string }) => each.label)).toEqual(['a', 'b']);
    expect(page2.body.instances.map((each: { label: string }) => each.label)).toEqual(['c']);
    expect(page2.body.next_token).toBeNull();
  });

  it('destroys a rental, putting its ask back; destroying it again is no_such_instance', async () => {
    const vast = await start();
    const id = (await vastai(vast, 'PUT', `/api/v0/asks/${H100_ASK}/`, rentBody())).body.new_contract;

    const destroyed = await vastai(vast, 'DELETE', `/api/v0/instances/${id}/`);
    const again = await vastai(vast, 'DELETE', `/api/v0/instances/${id}/`);
    const shown = await vastai(vast, 'GET', `/api/v0/instances/${id}/`);

    expect(destroyed.body).toEqual({ success: true });
    expect(again.body).toMatchObject({ success: false, error: 'no_such_instance' });
    expect(shown.body).toEqual({ instances: null });
    expect(vast.state().asks).toContain(H100_ASK);
  });

  it('needs the key for everything but search', async () => {
    const vast = await start();

    const wrong = await vastai(vast, 'PUT', `/api/v0/asks/${H100_ASK}/`, rentBody(), 'not-the-key');
    const none = await vastai(vast, 'GET', '/api/v1/instances/', undefined, null);
    const query = await fetch(`${vast.url}/api/v0/users/current/?api_key=${vast.apiKey}`);

    expect(wrong.status).toBe(401);
    expect(wrong.body).toMatchObject({ success: false, error: 'auth_error' });
    expect(none.status).toBe(401);
    expect(query.status).toBe(200);
    expect(vast.state().asks).toContain(H100_ASK);
  });

  it('refuses a malformed rental with invalid_args naming the field, renting nothing', async () => {
    const vast = await start();

    const noImage = await vastai(vast, 'PUT', `/api/v0/asks/${H100_ASK}/`, { ...rentBody(), image: '' });
    const badPort = await vastai(vast, 'PUT', `/api/v0/asks/${H100_ASK}/`, {
      ...rentBody(),
      env: { '-p 99999': '1' },
    });
    const bigDisk = await vastai(vast, 'PUT', `/api/v0/asks/${H100_ASK}/`, { ...rentBody(), disk: 100_000 });

    expect(noImage.status).toBe(400);
    expect(noImage.body.msg).toContain('image');
    expect(badPort.body.msg).toContain('-p 99999');
    expect(bigDisk.body.msg).toContain('disk');
    expect(vast.launchedMachineCount()).toBe(0);
  });

  it('a bid below min_bid makes a stopped contract and says the rental failed, with new_contract', async () => {
    const vast = await start();

    const answer = await vastai(vast, 'PUT', `/api/v0/asks/${H100_ASK}/`, rentBody({ bid: 0.5 }));
    const shown = (await vastai(vast, 'GET', `/api/v0/instances/${answer.body.new_contract}/`)).body
      .instances;

    expect(answer.status).toBe(200);
    expect(answer.body).toMatchObject({ success: false, new_contract: expect.any(Number) });
    expect(shown).toMatchObject({ cur_state: 'stopped', intended_status: 'stopped', next_state: 'stopped' });
  });
});

describe('Vast.ai emulator faults', () => {
  it('RATE_LIMITED answers plain-text 429 without Retry-After on its route only', async () => {
    const vast = await start({ faults: [{ code: 'RATE_LIMITED', route: 'show', count: 1 }] });
    const id = (await vastai(vast, 'PUT', `/api/v0/asks/${H100_ASK}/`, rentBody())).body.new_contract;

    const limited = await fetch(`${vast.url}/api/v0/instances/${id}/`, {
      headers: { authorization: `Bearer ${vast.apiKey}` },
    });
    const next = await vastai(vast, 'GET', `/api/v0/instances/${id}/`);

    expect(limited.status).toBe(429);
    expect(limited.headers.get('retry-after')).toBeNull();
    expect(await limited.text()).toContain('API requests too frequent');
    expect(next.status).toBe(200);
  });

  it('ASK_VANISHED makes the next rental no_such_ask and the ask leaves the book', async () => {
    const vast = await start();
    vast.failNextLaunchWithNoCapacity();

    const answer = await vastai(vast, 'PUT', `/api/v0/asks/${H100_ASK}/`, rentBody());

    expect(answer.status).toBe(410);
    expect(answer.body.error).toBe('no_such_ask');
    expect(vast.state().asks).not.toContain(H100_ASK);
  });

  it('IMAGE_PULL_FAILED stays loading and OCI_RUNTIME_CREATE_FAILED ends at created, each with its error in status_msg', async () => {
    const vast = await start({
      faults: [
        { code: 'IMAGE_PULL_FAILED', image: 'example/missing:1' },
        { code: 'OCI_RUNTIME_CREATE_FAILED', image: 'example/broken:1' },
      ],
    });
    const pulled = (
      await vastai(vast, 'PUT', `/api/v0/asks/${H100_ASK}/`, rentBody({ image: 'example/missing:1' }))
    ).body;
    const broken = (
      await vastai(vast, 'PUT', `/api/v0/asks/${RTX4090_ASK}/`, rentBody({ image: 'example/broken:1' }))
    ).body;
    await vast.settle();
    clock.advance(5000);

    const pull = (await vastai(vast, 'GET', `/api/v0/instances/${pulled.new_contract}/`)).body.instances;
    const oci = (await vastai(vast, 'GET', `/api/v0/instances/${broken.new_contract}/`)).body.instances;

    expect(pull.actual_status).toBe('loading');
    expect(pull.intended_status).toBe('running');
    expect(pull.status_msg).toContain('pull access denied for example/missing');
    expect(oci.actual_status).toBe('created');
    expect(oci.status_msg).toContain(': OCI runtime create failed:');
  });

  it('OUTBID stops an interruptible rental after it ran: exited, with the three states stopped', async () => {
    const vast = await start({ faults: [{ code: 'OUTBID', afterRunningMs: 1000 }] });
    const onDemand = (await vastai(vast, 'PUT', `/api/v0/asks/${H100_ASK}/`, rentBody())).body.new_contract;
    const spot = (await vastai(vast, 'PUT', `/api/v0/asks/${RTX4090_ASK}/`, rentBody({ bid: 0.25 }))).body
      .new_contract;
    await vast.settle();
    clock.advance(3000);
    expect((await vastai(vast, 'GET', `/api/v0/instances/${spot}/`)).body.instances.actual_status).toBe(
      'running',
    );

    clock.advance(1000);
    const outbid = (await vastai(vast, 'GET', `/api/v0/instances/${spot}/`)).body.instances;
    const kept = (await vastai(vast, 'GET', `/api/v0/instances/${onDemand}/`)).body.instances;

    expect(outbid).toMatchObject({
      actual_status: 'exited',
      cur_state: 'stopped',
      intended_status: 'stopped',
      next_state: 'stopped',
    });
    expect(kept.actual_status).toBe('running');
    expect(() => vast.outbid(onDemand)).toThrow(/on-demand/);
  });

  it('faults come and go over HTTP; a bad one is refused naming the field', async () => {
    const vast = await start();

    const added = await fetch(`${vast.url}/_emulator/faults`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ code: 'SLOW_RESPONSE', route: 'search', delayMs: 1 }),
    });
    const bad = await fetch(`${vast.url}/_emulator/faults`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ code: 'OUTBID', route: 'search' }),
    });

    expect(added.status).toBe(201);
    expect(bad.status).toBe(400);
    expect(((await bad.json()) as { error: string }).error).toContain('route');
    expect((await vastai(vast, 'POST', '/api/v0/bundles/', {})).status).toBe(200);
    expect(vast.faults()).toHaveLength(1);
  });

  it('SLOW_RESPONSE holds its route only: a show answers while a search still waits', async () => {
    const vast = await start({
      faults: [{ code: 'SLOW_RESPONSE', route: 'search', delayMs: 1500, count: 1 }],
    });
    const id = (await vastai(vast, 'PUT', `/api/v0/asks/${H100_ASK}/`, rentBody())).body.new_contract;
    const order: string[] = [];

    const slow = vastai(vast, 'POST', '/api/v0/bundles/', {}).then((answer) => {
      order.push('search');
      return answer;
    });
    await vastai(vast, 'GET', `/api/v0/instances/${id}/`).then(() => order.push('show'));
    const searched = await slow;

    expect(order).toEqual(['show', 'search']);
    expect(searched.status).toBe(200);
  });

  it('the control routes outbid a rental and vanish an ask now', async () => {
    const vast = await start();
    const spot = (await vastai(vast, 'PUT', `/api/v0/asks/${RTX4090_ASK}/`, rentBody({ bid: 0.3 }))).body
      .new_contract;

    const outbid = await fetch(`${vast.url}/_emulator/instances/${spot}/outbid`, { method: 'POST' });
    const vanished = await fetch(`${vast.url}/_emulator/asks/${H100_ASK}/vanish`, { method: 'POST' });
    const unknown = await fetch(`${vast.url}/_emulator/instances/999/outbid`, { method: 'POST' });

    expect(outbid.status).toBe(200);
    expect(vast.state().instances[0]).toMatchObject({
      id: spot,
      actualStatus: 'exited',
      curState: 'stopped',
    });
    expect(vanished.status).toBe(200);
    expect((await vastai(vast, 'PUT', `/api/v0/asks/${H100_ASK}/`, rentBody())).body.error).toBe(
      'no_such_ask',
    );
    expect(unknown.status).toBe(400);
  });
});
