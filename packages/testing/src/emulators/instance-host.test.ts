import { describe, expect, it, vi } from 'vitest';
import { RecordingHosts, settle } from './aws/aws-emulator.test.helpers.js';
import { EmulatedInstanceHost } from './instance-host.js';

const REQUEST = { instanceId: 'instance-1', userData: '' };

describe('EmulatedInstanceHost', () => {
  it('reports the address to onUp once the host is up', async () => {
    const hosts = new RecordingHosts('manual');
    const onUp = vi.fn();
    const host = new EmulatedInstanceHost(hosts, REQUEST, () => undefined, onUp);
    expect(host.status).toBe('launching');

    await hosts.finishLaunch('instance-1');
    expect(onUp).toHaveBeenCalledExactlyOnceWith('127.0.10.1');
    expect(host.status).toBe('up');
    expect(host.address).toBe('127.0.10.1');
  });

  it('reports a launch that fails to onFailure', async () => {
    const hosts = new RecordingHosts('manual');
    const onFailure = vi.fn();
    const host = new EmulatedInstanceHost(hosts, REQUEST, onFailure);

    await hosts.finishLaunch('instance-1', new Error('no sshd'));
    expect(onFailure).toHaveBeenCalledExactlyOnceWith(new Error('no sshd'));
    expect(host.status).toBe('failed');
  });

  it('settled resolves once the launch is over, after onUp heard of it', async () => {
    const hosts = new RecordingHosts('manual');
    const onUp = vi.fn();
    const host = new EmulatedInstanceHost(hosts, REQUEST, () => undefined, onUp);
    let upHeardWhenSettled: boolean | undefined;
    const settled = host.settled.then(() => {
      upHeardWhenSettled = onUp.mock.calls.length === 1;
    });
    await settle();
    // A disk attached now must wait: the host is not there to take it yet.
    expect(upHeardWhenSettled).toBeUndefined();

    await hosts.finishLaunch('instance-1');
    await settled;
    expect(upHeardWhenSettled).toBe(true);
    expect(host.status).toBe('up');
  });

  it('settled resolves, not rejects, when the launch fails, after onFailure heard of it', async () => {
    const hosts = new RecordingHosts('manual');
    const onFailure = vi.fn();
    const host = new EmulatedInstanceHost(hosts, REQUEST, onFailure);
    const settled = host.settled.then(() => onFailure.mock.calls.length);

    await hosts.finishLaunch('instance-1', new Error('no sshd'));
    await expect(settled).resolves.toBe(1);
    expect(host.status).toBe('failed');
    expect(host.address).toBeUndefined();
  });

  it('stop() during the launch terminates the host once the launch is over, not before', async () => {
    const hosts = new RecordingHosts('manual');
    const onUp = vi.fn();
    const host = new EmulatedInstanceHost(hosts, REQUEST, () => undefined, onUp);
    let stopped = false;
    const stopping = host.stop().then(() => {
      stopped = true;
    });
    await settle();
    // A terminate now could miss the host still being made, which would then be left behind.
    expect(hosts.terminated).toEqual([]);
    expect(stopped).toBe(false);

    await hosts.finishLaunch('instance-1');
    await stopping;
    expect(hosts.terminated).toEqual(['instance-1']);
    // The instance is going away: its host coming up is no longer news.
    expect(onUp).not.toHaveBeenCalled();
  });

  it('does not report a launch that fails once stop() has begun (the stop made it fail)', async () => {
    const hosts = new RecordingHosts('manual');
    const onFailure = vi.fn();
    const host = new EmulatedInstanceHost(hosts, REQUEST, onFailure);
    const stopping = host.stop();

    await hosts.finishLaunch('instance-1', new Error('the host stopped while booting'));
    await stopping;
    expect(onFailure).not.toHaveBeenCalled();
    expect(hosts.terminated).toEqual(['instance-1']);
  });
});
