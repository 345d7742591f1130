import { describe, expect, it } from 'vitest';
import { autoscaledCount } from './service-scaling.js';
import { ServiceRequestStats } from './service-stats.js';

const scaling = { metric: 'rps' as const, target: 5, scale_up_delay: 60, scale_down_delay: 120 };
const range = { min: 0, max: 3 };
const now = 1_000_000;

describe('the RPS autoscaler', () => {
  it('wants ceil(rps / target) within the range', () => {
    const count = (rps: number) =>
      autoscaledCount({ range, scaling, rps, current: 1, lastScaledAt: null, now });
    expect(count(0)).toBe(0);
    expect(count(4)).toBe(1);
    expect(count(11)).toBe(3);
    expect(count(100)).toBe(3);
  });

  it('holds a change until its delay has passed since the last one, except from zero', () => {
    const at = (current: number, rps: number, sinceSeconds: number) =>
      autoscaledCount({ range, scaling, rps, current, lastScaledAt: now - sinceSeconds * 1000, now });
    expect(at(1, 15, 30)).toBe(1);
    expect(at(1, 15, 60)).toBe(3);
    expect(at(0, 15, 0)).toBe(3);
    expect(at(3, 0, 60)).toBe(3);
    expect(at(3, 0, 120)).toBe(0);
  });
});

describe('service request stats', () => {
  it('averages the requests of the window, per run', () => {
    const stats = new ServiceRequestStats();
    for (let index = 0; index < 10; index += 1) stats.record('a', now - 500);
    stats.record('a', now - 5_500);
    stats.record('b', now);
    expect(stats.rps('a', 2, now)).toBe(5);
    expect(stats.rps('a', 10, now)).toBe(1.1);
    expect(stats.rps('b', 1, now)).toBe(1);
    stats.forget('a');
    expect(stats.rps('a', 10, now)).toBe(0);
  });
});

describe("a gateway's request stats", () => {
  it("add to the proxy's own, placed on this clock, each report replacing the last", () => {
    const stats = new ServiceRequestStats();
    stats.record('a', now - 500);
    // The gateway's clock is 100 s ahead: its seconds are read on its clock.
    const gatewayNow = now + 100_000;
    const second = Math.floor((gatewayNow - 500) / 1000);
    const report = {
      now: gatewayNow,
      services: [{ run_id: 'a', requests: [[second, 9]] as Array<[number, number]>, waiting: 0 }],
    };
    stats.report('gw', report, now);
    expect(stats.rps('a', 2, now)).toBe(5);
    // The same report read again counts nothing twice; one without the run, none of it.
    stats.report('gw', report, now);
    expect(stats.rps('a', 2, now)).toBe(5);
    stats.report('gw', { now: gatewayNow, services: [] }, now);
    expect(stats.rps('a', 2, now)).toBe(0.5);
  });

  it("count a gateway's waiting requests while its report is recent", () => {
    const stats = new ServiceRequestStats();
    stats.report('gw', { now, services: [{ run_id: 'a', requests: [], waiting: 2 }] }, now);
    expect(stats.waiting('a', now + 1_000)).toBe(2);
    expect(stats.waiting('a', now + 60_000)).toBe(0);
    stats.forgetGateway('gw');
    expect(stats.waiting('a', now + 1_000)).toBe(0);
  });
});

describe('a request waiting for a replica', () => {
  it('keeps one replica wanted when the rate alone would want none', () => {
    expect(autoscaledCount({ range, scaling, rps: 0, waiting: 1, current: 0, lastScaledAt: now, now })).toBe(
      1,
    );
    const stats = new ServiceRequestStats();
    const wait = stats.waitStarted('a');
    expect(stats.waiting('a')).toBe(1);
    wait.done();
    wait.done();
    expect(stats.waiting('a')).toBe(0);
  });
});
