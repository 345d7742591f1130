import { existsSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { RunnerClient } from '@dstack/runner';
import { ShimClient } from '@dstack/shim';
import { describe, expect, it } from 'vitest';
import { agentHealthcheck, bootLocalAgent } from './boot-local-agent.js';

describe('bootLocalAgent', () => {
  it('boots a real shim for a VM instance, and stop() takes it down with its home', async () => {
    const agent = await bootLocalAgent({ kind: 'vm' });
    try {
      expect(agent).toMatchObject({ kind: 'vm', host: '127.0.0.1', agentPorts: { shim: agent.port } });
      expect(await new ShimClient(agent.url).healthcheck()).toMatchObject({ service: 'dstack-shim' });
      expect(await new ShimClient(agent.url).listTasks()).toEqual([]);
    } finally {
      await agent.stop();
    }
    await expect(agentHealthcheck(agent)).rejects.toThrow();
    expect(existsSync(agent.homeDir)).toBe(false);
    await agent.stop();
  });

  it('boots a real runner for a container instance', async () => {
    const agent = await bootLocalAgent({ kind: 'container' });
    try {
      expect(agent.agentPorts).toEqual({ runner: agent.port });
      expect(await new RunnerClient(agent.url).healthcheck()).toMatchObject({ service: 'dstack-runner' });
      expect(await agentHealthcheck(agent)).toMatchObject({ service: 'dstack-runner' });
    } finally {
      await agent.stop();
    }
  });

  it('leaves a given home directory in place', async () => {
    const homeDir = await mkdtemp(join(tmpdir(), 'dstack-agent-home-'));
    try {
      const agent = await bootLocalAgent({ kind: 'vm', homeDir });
      await agent.stop();
      expect(existsSync(join(homeDir, 'tasks'))).toBe(true);
    } finally {
      await rm(homeDir, { recursive: true, force: true });
    }
  });

  it('rejects an unknown kind, naming it', async () => {
    await expect(bootLocalAgent({ kind: 'gpu' as 'vm' })).rejects.toThrow(
      'kind must be "vm" or "container", got "gpu"',
    );
  });
});
