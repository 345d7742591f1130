import { createServer } from 'node:net';
import {
  type InstanceOfferWithAvailability,
  InvalidCredentialsError,
  type JobProvisioningData,
  NoCapacityError,
  NotYetTerminatedError,
  RequirementsSchema,
} from '@dstack/core';
import { describe, expect, it } from 'vitest';
import { fakeOffers } from '../fake-backend/fake-offers.js';
import {
  checkAgentAnswers,
  checkInvalidCredentialsError,
  checkNoCapacityError,
  checkTerminateSucceeds,
  localAgentOf,
  pollUntilHostname,
} from './compute-checks.js';
import { ConformanceViolation } from './conformance-violation.js';
import { checkOffersOrderedByPrice, checkOffersWellFormed, deriveFilters } from './offer-checks.js';
import { generateProjectSshKeys } from './project-ssh-keys.js';

const keys = generateProjectSshKeys();
const anyCpu = RequirementsSchema.parse({ resources: { cpu: { count: { min: 1 } }, memory: {} } });
const offers: InstanceOfferWithAvailability[] = fakeOffers('fake', {}, anyCpu, null);
const started: JobProvisioningData = {
  backend: 'fake',
  instance_type: {
    name: 'x',
    resources: { cpus: 1, memory_mib: 1024, gpus: [], spot: false, disk: { size_mib: 1 } },
  },
  instance_id: 'i-1',
  hostname: null,
  public_ip_enabled: true,
  region: 'r',
  price: 1,
  username: 'u',
  ssh_port: null,
  dockerized: true,
};

describe('offer checks', () => {
  it('reject an offer that is not an InstanceOfferWithAvailability, or of another backend', () => {
    expect(() => checkOffersWellFormed([{ ...offers[0], price: -1 }], 'fake')).toThrow(
      /offer #0 is invalid \(price/,
    );
    expect(() => checkOffersWellFormed(offers, 'aws')).toThrow('has backend "fake", expected "aws"');
    expect(() => checkOffersWellFormed('nope', 'fake')).toThrow(ConformanceViolation);
    expect(() => checkOffersWellFormed(offers, 'fake')).not.toThrow();
  });

  it('reject offers that are not cheapest first', () => {
    expect(() => checkOffersOrderedByPrice([...offers].reverse())).toThrow('cheapest first');
    expect(() => checkOffersOrderedByPrice(offers)).not.toThrow();
  });

  it('derive filters that split the offers: some kept, some dropped', () => {
    for (const kind of ['cpu', 'memory', 'max_price', 'gpu'] as const) {
      const [filter] = deriveFilters(offers, anyCpu, kind);
      if (!filter) throw new Error(`no ${kind} filter`);
      const kept = fakeOffers('fake', {}, filter.requirements, null);
      expect(filter.expectsOffers, filter.what).toBe(true);
      expect(kept.length, filter.what).toBeGreaterThan(0);
      expect(kept.length, filter.what).toBeLessThan(offers.length);
    }
  });
});

describe('error checks', () => {
  it('want InvalidCredentialsError naming the field', () => {
    expect(() => checkInvalidCredentialsError(undefined, ['creds', 'api_key'])).toThrow(
      'accepted the config',
    );
    expect(() => checkInvalidCredentialsError(new Error('401'), ['creds', 'api_key'])).toThrow(
      'threw Error: 401',
    );
    expect(() =>
      checkInvalidCredentialsError(new InvalidCredentialsError([['creds']]), ['creds', 'api_key']),
    ).toThrow('the error names creds');
    expect(() =>
      checkInvalidCredentialsError(new InvalidCredentialsError([['creds', 'api_key']]), ['creds', 'api_key']),
    ).not.toThrow();
  });

  it('want NoCapacityError for capacity faults', () => {
    expect(() => checkNoCapacityError(new Error('InsufficientInstanceCapacity'), 'runJob')).toThrow(
      ConformanceViolation,
    );
    expect(() => checkNoCapacityError(undefined, 'runJob')).toThrow('succeeded despite the capacity fault');
    expect(() => checkNoCapacityError(new NoCapacityError(), 'runJob')).not.toThrow();
  });
});

describe('provisioning checks', () => {
  it('poll at most maxAttempts times for a hostname that never comes', async () => {
    let calls = 0;
    const compute = {
      type: 'fake',
      updateProvisioningData: async (data: JobProvisioningData) => {
        calls += 1;
        return data;
      },
    };
    await expect(
      pollUntilHostname(compute, started, keys, { maxAttempts: 4, intervalMs: 1 }),
    ).rejects.toThrow('hostname still unset after 4 calls');
    expect(calls).toBe(4);
  });

  it('reject an answer about another instance', async () => {
    const compute = {
      type: 'fake',
      updateProvisioningData: async (data: JobProvisioningData) => ({
        ...data,
        instance_id: 'i-2',
        hostname: 'h',
      }),
    };
    await expect(
      pollUntilHostname(compute, started, keys, { maxAttempts: 4, intervalMs: 1 }),
    ).rejects.toThrow('instance_id changed from "i-1" to "i-2"');
  });

  it('find a local agent only on a loopback hostname with agent ports', () => {
    const withPorts = (hostname: string) => ({
      ...started,
      hostname,
      backend_data: '{"agent_ports":{"shim":1234}}',
    });
    expect(localAgentOf(withPorts('127.0.0.1'), 'vm')).toEqual({ kind: 'vm', url: 'http://127.0.0.1:1234' });
    expect(localAgentOf(withPorts('203.0.113.5'), 'vm')).toBeUndefined();
    expect(localAgentOf(withPorts('127.0.0.1'), 'container')).toBeUndefined();
    expect(
      localAgentOf({ ...started, hostname: '127.0.0.1', backend_data: 'not json' }, 'vm'),
    ).toBeUndefined();
  });

  it('fail when the agent does not answer', async () => {
    const port = await new Promise<number>((resolve) => {
      const server = createServer();
      server.listen(0, '127.0.0.1', () => {
        const address = server.address();
        server.close(() => resolve(typeof address === 'object' && address ? address.port : 0));
      });
    });
    await expect(checkAgentAnswers({ kind: 'vm', url: `http://127.0.0.1:${port}` })).rejects.toThrow(
      'did not answer',
    );
  });
});

describe('termination checks', () => {
  it('fail a terminate that throws the second time', async () => {
    let calls = 0;
    const terminate = async () => {
      calls += 1;
      if (calls > 1) throw new Error('InvalidInstanceID.NotFound');
    };
    await expect(checkTerminateSucceeds(terminate, 'twice', 2)).rejects.toThrow(
      'call 2 of 2 threw Error: InvalidInstanceID.NotFound',
    );
  });

  it('call again after NotYetTerminatedError, within the attempts', async () => {
    let calls = 0;
    const terminate = async () => {
      calls += 1;
      if (calls < 3) throw new NotYetTerminatedError();
    };
    await checkTerminateSucceeds(terminate, 'slow', 1, { maxAttempts: 5, intervalMs: 1 });
    expect(calls).toBe(3);
    const never = async () => {
      throw new NotYetTerminatedError();
    };
    await expect(
      checkTerminateSucceeds(never, 'never', 1, { maxAttempts: 2, intervalMs: 1 }),
    ).rejects.toThrow('NotYetTerminatedError');
  });
});

describe('generateProjectSshKeys', () => {
  it('makes an OpenSSH ed25519 key pair', () => {
    expect(keys.publicKey).toMatch(
      /^ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAI[A-Za-z0-9+/]+=* dstack-conformance$/,
    );
    expect(keys.privateKey).toContain('-----BEGIN OPENSSH PRIVATE KEY-----');
  });
});
