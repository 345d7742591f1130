/**
 * A backend whose provider API accepts requests and never answers: its Compute calls end at their
 * deadline with an error naming the backend and the call, so the caller records a failure and its
 * worker moves on. Quick calls and plain values pass through unchanged.
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { ComputeDeadlineError, withComputeDeadlines } from './compute-deadlines.js';

let provider: Server;
let providerUrl: string;

beforeEach(async () => {
  // Takes every request, answers none.
  provider = createServer(() => {});
  await new Promise<void>((resolve) => provider.listen(0, '127.0.0.1', resolve));
  providerUrl = `http://127.0.0.1:${(provider.address() as AddressInfo).port}`;
});

afterEach(async () => {
  provider.closeAllConnections();
  await new Promise((resolve) => provider.close(resolve));
});

/** A Compute-shaped backend that calls its provider's API, which never answers. */
class SilentProviderCompute {
  readonly type = 'silent';
  readonly calls: string[] = [];

  async createInstance(name: string): Promise<string> {
    this.calls.push(`createInstance ${name}`);
    const response = await fetch(`${providerUrl}/instances`, { method: 'POST', body: name });
    return response.text();
  }

  async runJob(name: string): Promise<string> {
    // As runJobWithCreateInstance: the inner call runs under runJob's deadline only.
    return this.createInstance(name);
  }

  async terminateInstance(id: string): Promise<void> {
    await fetch(`${providerUrl}/instances/${id}`, { method: 'DELETE' });
  }

  async getOffers(): Promise<string[]> {
    return ['offer'];
  }

  isSuitablePlacementGroup(): boolean {
    return true;
  }
}

describe('withComputeDeadlines', () => {
  it('ends a launch the provider never answers at the launch deadline, naming the backend and call', async () => {
    const compute = withComputeDeadlines(new SilentProviderCompute(), { launchMs: 100, otherMs: 60_000 });
    const launch = compute.createInstance('i-1');
    await expect(launch).rejects.toBeInstanceOf(ComputeDeadlineError);
    await expect(launch).rejects.toThrow('backend silent: createInstance did not answer within 0.1 s');
  });

  it('ends any other call at the other deadline', async () => {
    const compute = withComputeDeadlines(new SilentProviderCompute(), { launchMs: 60_000, otherMs: 100 });
    await expect(compute.terminateInstance('i-1')).rejects.toThrow(
      'backend silent: terminateInstance did not answer within 0.1 s',
    );
  });

  it('bounds a call made inside another once, under the outer call', async () => {
    const inner = new SilentProviderCompute();
    const compute = withComputeDeadlines(inner, { launchMs: 100 });
    await expect(compute.runJob('i-2')).rejects.toThrow('backend silent: runJob did not answer');
    expect(inner.calls).toEqual(['createInstance i-2']);
  });

  it('passes quick answers, plain values and fields through', async () => {
    const compute = withComputeDeadlines(new SilentProviderCompute(), { launchMs: 100, otherMs: 100 });
    expect(await compute.getOffers()).toEqual(['offer']);
    expect(compute.isSuitablePlacementGroup()).toBe(true);
    expect(compute.type).toBe('silent');
    expect(compute).toBeInstanceOf(SilentProviderCompute);
  });
});
