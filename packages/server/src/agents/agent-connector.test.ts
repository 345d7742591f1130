import { createServer, request, type Server } from 'node:http';
import type { JobProvisioningData } from '@dstack/core';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { sshdUnavailableReason, startTestSshd, type TestSshd } from './__fixtures__/test-sshd.js';
import { AgentConnector } from './agent-connector.js';
import { AgentUnreachableError } from './agent-unreachable-error.js';
import { generateProjectSshKeyPair } from './ssh-keys.js';

/** A loopback HTTP server answering every request with its name. */
async function startNamedServer(name: string): Promise<{ port: number; server: Server }> {
  const server = createServer((_request, response) => response.end(name));
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const address = server.address();
  return { port: typeof address === 'object' && address !== null ? address.port : 0, server };
}

/** GET without connection reuse, so no idle keep-alive socket holds a tunnel open. */
function getText(url: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const outgoing = request(url, { agent: false, timeout: 10_000 }, (response) => {
      let body = '';
      response.setEncoding('utf8');
      response.on('data', (chunk: string) => {
        body += chunk;
      });
      response.on('end', () => resolve(body));
      response.on('error', reject);
    });
    outgoing.on('timeout', () => outgoing.destroy(new Error('timed out')));
    outgoing.on('error', reject);
    outgoing.end();
  });
}

async function eventually<T>(attempt: () => Promise<T>, timeoutMs = 15_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    try {
      return await attempt();
    } catch (error) {
      if (Date.now() > deadline) throw error;
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
  }
}

function provisioningData(overrides: Partial<JobProvisioningData>): JobProvisioningData {
  return {
    backend: 'local',
    instance_type: {
      name: 'local',
      resources: { cpus: 1, memory_mib: 1024, gpus: [], spot: false, disk: { size_mib: 1024 } },
    },
    instance_id: 'test-instance',
    hostname: '127.0.0.1',
    public_ip_enabled: false,
    region: 'local',
    price: 0,
    username: 'root',
    ssh_port: null,
    dockerized: true,
    ...overrides,
  };
}

const agentPorts = (shim: number) => JSON.stringify({ agent_ports: { shim } });

const servers: Server[] = [];
let shimServer: { port: number; server: Server };
let runnerServer: { port: number; server: Server };
const connectors: AgentConnector[] = [];

function newConnector(options?: ConstructorParameters<typeof AgentConnector>[0]): AgentConnector {
  const connector = new AgentConnector(options);
  connectors.push(connector);
  return connector;
}

beforeAll(async () => {
  shimServer = await startNamedServer('shim');
  runnerServer = await startNamedServer('runner');
  servers.push(shimServer.server, runnerServer.server);
});

afterEach(async () => {
  await Promise.all(connectors.splice(0).map((connector) => connector.close()));
});

afterAll(async () => {
  await Promise.all(servers.map((server) => new Promise((resolve) => server.close(resolve))));
});

describe('AgentConnector, direct mode', () => {
  it('returns loopback URLs for a local instance without SSH', async () => {
    const connector = newConnector();
    const data = provisioningData({ backend_data: agentPorts(shimServer.port) });
    const privateKey = generateProjectSshKeyPair().privateKey;

    const shimUrl = await connector.shimUrl(data, privateKey);
    const runnerUrl = await connector.runnerUrl(data, privateKey, runnerServer.port);

    expect(shimUrl).toBe(`http://127.0.0.1:${shimServer.port}`);
    expect(runnerUrl).toBe(`http://127.0.0.1:${runnerServer.port}`);
    expect(await getText(shimUrl)).toBe('shim');
    expect(await getText(runnerUrl)).toBe('runner');
  });

  it('uses the standard shim port when the backend data names none', async () => {
    const connector = newConnector();
    expect(await connector.shimUrl(provisioningData({ hostname: 'localhost' }), '')).toBe(
      'http://localhost:10998',
    );
    expect(await connector.shimUrl(provisioningData({ hostname: '::1' }), '')).toBe('http://[::1]:10998');
  });

  it('refuses an instance without a hostname', async () => {
    const connector = newConnector();
    await expect(connector.shimUrl(provisioningData({ hostname: null }), '')).rejects.toSatisfy((error) =>
      AgentUnreachableError.isInstance(error),
    );
  });
});

const skipReason = sshdUnavailableReason();
if (skipReason !== null) console.warn(`Skipping the SSH tunnel tests: ${skipReason}`);

describe.skipIf(skipReason !== null)('AgentConnector over SSH (real sshd)', () => {
  let sshd: TestSshd;

  beforeAll(async () => {
    sshd = await startTestSshd();
  }, 30_000);

  afterAll(async () => {
    await sshd?.stop();
  });

  const overSsh = (overrides: Partial<JobProvisioningData> = {}) =>
    provisioningData({ ssh_port: sshd.port, backend_data: agentPorts(shimServer.port), ...overrides });

  async function noSessionsLeft(): Promise<void> {
    await eventually(async () => expect(await sshd.sessionPids()).toEqual([]));
  }

  it('forwards two agent ports through one SSH connection', { timeout: 30_000 }, async () => {
    const connector = newConnector();
    const loginsBefore = sshd.acceptedLogins();

    const shimUrl = await connector.shimUrl(overSsh(), sshd.privateKey);
    const runnerUrl = await connector.runnerUrl(overSsh(), sshd.privateKey, runnerServer.port);

    expect(shimUrl).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
    expect(shimUrl).not.toBe(`http://127.0.0.1:${shimServer.port}`);
    expect(runnerUrl).not.toBe(shimUrl);
    expect(await getText(shimUrl)).toBe('shim');
    expect(await getText(runnerUrl)).toBe('runner');
    expect(await connector.shimUrl(overSsh(), sshd.privateKey)).toBe(shimUrl);
    expect(sshd.acceptedLogins() - loginsBefore).toBe(1);
  });

  it('goes through ssh_proxy as a jump host', { timeout: 30_000 }, async () => {
    const connector = newConnector();
    const loginsBefore = sshd.acceptedLogins();
    const data = overSsh({ ssh_proxy: { hostname: '127.0.0.1', port: sshd.port, username: 'root' } });

    const shimUrl = await connector.shimUrl(data, sshd.privateKey);
    const runnerUrl = await connector.runnerUrl(data, sshd.privateKey, runnerServer.port);

    expect(await getText(shimUrl)).toBe('shim');
    expect(await getText(runnerUrl)).toBe('runner');
    // One login on the proxy, one on the target through it.
    expect(sshd.acceptedLogins() - loginsBefore).toBe(2);
  });

  it('reports a rejected key as AgentUnreachableError', { timeout: 30_000 }, async () => {
    const connector = newConnector();
    const wrongKey = generateProjectSshKeyPair().privateKey;

    const failure = await connector.shimUrl(overSsh(), wrongKey).catch((error: unknown) => error);

    expect(AgentUnreachableError.isInstance(failure)).toBe(true);
    expect(failure).toMatchObject({ host: '127.0.0.1', port: sshd.port });
    expect((failure as Error).message).toContain(`root@127.0.0.1:${sshd.port}`);
  });

  it('reports a closed SSH port as AgentUnreachableError', { timeout: 30_000 }, async () => {
    const connector = newConnector();
    // The runner test server speaks HTTP, not SSH: the handshake fails.
    const failure = await connector
      .shimUrl(overSsh({ ssh_port: runnerServer.port }), sshd.privateKey)
      .catch((error: unknown) => error);

    expect(AgentUnreachableError.isInstance(failure)).toBe(true);
    expect(failure).toMatchObject({ port: runnerServer.port });
  });

  it('close() ends the SSH sessions and the local listeners', { timeout: 30_000 }, async () => {
    const connector = newConnector();
    const shimUrl = await connector.shimUrl(overSsh(), sshd.privateKey);
    expect(await getText(shimUrl)).toBe('shim');
    expect((await sshd.sessionPids()).length).toBeGreaterThan(0);

    await connector.close();

    await noSessionsLeft();
    await expect(getText(shimUrl)).rejects.toThrow(/ECONNREFUSED/);
    await expect(connector.shimUrl(overSsh(), sshd.privateKey)).rejects.toThrow(/closed/);
  });

  it('closes an idle tunnel and opens a new one on the next request', { timeout: 30_000 }, async () => {
    const connector = newConnector({ idleTimeoutMs: 200 });
    expect(await getText(await connector.shimUrl(overSsh(), sshd.privateKey))).toBe('shim');

    await noSessionsLeft();

    const loginsBefore = sshd.acceptedLogins();
    expect(await getText(await connector.shimUrl(overSsh(), sshd.privateKey))).toBe('shim');
    expect(sshd.acceptedLogins() - loginsBefore).toBe(1);
  });

  it('reconnects when the SSH connection drops', { timeout: 30_000 }, async () => {
    const connector = newConnector();
    const shimUrl = await connector.shimUrl(overSsh(), sshd.privateKey);
    expect(await getText(shimUrl)).toBe('shim');
    const loginsBefore = sshd.acceptedLogins();

    for (const pid of await sshd.sessionPids()) process.kill(pid, 'SIGTERM');
    await noSessionsLeft();

    // The same URL keeps working: the forward reconnects on the next request.
    expect(await eventually(() => getText(shimUrl))).toBe('shim');
    expect(sshd.acceptedLogins() - loginsBefore).toBe(1);
  });
});
