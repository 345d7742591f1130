import { type TaskConfigInput, TaskConfigSchema } from '@dstack/core/agent-protocol';
import { describe, expect, it } from 'vitest';
import { buildContainerSpec, type ContainerSpecInput, containerNameFor } from './container-spec.js';

function specFor(task: Partial<TaskConfigInput>, extra: Partial<ContainerSpecInput> = {}) {
  return buildContainerSpec({
    task: TaskConfigSchema.parse({
      id: '0f1e2d3c-4b5a-6978-8796-a5b4c3d2e1f0',
      name: 'my-run-0-0',
      image_name: 'ubuntu:22.04',
      ...task,
    }),
    taskHomeDir: '/var/lib/dstack/tasks/t1',
    runtimeDirectory: '/var/cache/dstack/runner-runtime/0123',
    runnerCommand: [
      '/dstack/runtime/lib/ld-linux-x86-64.so.2',
      '--library-path',
      '/dstack/runtime/lib',
      '/dstack/runtime/bin/node',
      '/dstack/runtime/runner.mjs',
    ],
    runnerPort: 41234,
    ...extra,
  });
}

describe('buildContainerSpec', () => {
  it('runs the runner from the mounted portable runtime with host networking on the given port', () => {
    const { name, body } = specFor({});
    expect(name).toBe('dstack-my-run-0-0-0f1e2d3c');
    expect(body.Image).toBe('ubuntu:22.04');
    expect(body.Cmd).toEqual([
      '/dstack/runtime/lib/ld-linux-x86-64.so.2',
      '--library-path',
      '/dstack/runtime/lib',
      '/dstack/runtime/bin/node',
      '/dstack/runtime/runner.mjs',
      'start',
      '--http-port',
      '41234',
      '--home',
      '/dstack/home',
      '--host',
      '127.0.0.1',
    ]);
    expect(body.Labels).toEqual({ 'ai.dstack.task-id': '0f1e2d3c-4b5a-6978-8796-a5b4c3d2e1f0' });
    expect(body.HostConfig.NetworkMode).toBe('host');
    expect(body.HostConfig.Mounts).toEqual([
      {
        Type: 'bind',
        Source: '/var/cache/dstack/runner-runtime/0123',
        Target: '/dstack/runtime',
        ReadOnly: true,
      },
      { Type: 'bind', Source: '/var/lib/dstack/tasks/t1', Target: '/dstack/home', ReadOnly: false },
    ]);
    // Root runs the runner; with no user anywhere the job runs as root too.
    expect(body.User).toBe('0:0');
    expect(body.ExposedPorts).toBeUndefined();
    expect(body.HostConfig.PortBindings).toBeUndefined();
  });

  it('sets no resource limits, privileges or devices when the task asks for none', () => {
    const { HostConfig } = specFor({}).body;
    expect(HostConfig.Privileged).toBe(false);
    expect(HostConfig.Memory).toBeUndefined();
    expect(HostConfig.NanoCpus).toBeUndefined();
    expect(HostConfig.ShmSize).toBeUndefined();
    expect(HostConfig.DeviceRequests).toBeUndefined();
  });

  it('passes privileges and resource limits', () => {
    const { body } = specFor({
      privileged: true,
      memory: 2 * 1024 ** 3,
      cpu: 1.5,
      shm_size: 64 * 1024 ** 2,
    });
    expect(body.HostConfig).toMatchObject({
      Privileged: true,
      Memory: 2147483648,
      NanoCpus: 1_500_000_000,
      ShmSize: 67108864,
    });
  });

  it('keeps the container root and has the runner run the job as container_user', () => {
    const { body } = specFor({ container_user: 'alice:staff' }, { imageUser: '1000' });
    expect(body.User).toBe('0:0');
    expect(body.Cmd.slice(-2)).toEqual(['--job-user', 'alice:staff']);
  });

  it("runs the job as the image's own user when the task has no container_user", () => {
    const { body } = specFor({}, { imageUser: '1000:1000' });
    expect(body.User).toBe('0:0');
    expect(body.Cmd.slice(-2)).toEqual(['--job-user', '1000:1000']);
    expect(specFor({}, { imageUser: '' }).body.Cmd).not.toContain('--job-user');
  });

  it.each([
    [-1, -1],
    [2, 2],
  ])('requests gpu=%i as an nvidia device request with Count %i', (gpu, count) => {
    expect(specFor({ gpu }).body.HostConfig.DeviceRequests).toEqual([
      { Driver: 'nvidia', Count: count, Capabilities: [['gpu']] },
    ]);
  });

  it("lets the shim's variables win over the task's env", () => {
    const { body } = specFor(
      { env: { FOO: 'bar', DSTACK_TASK_ID: 'from-task' } },
      { shimEnvironment: { DSTACK_TASK_ID: 'from-shim' } },
    );
    expect(body.Env).toEqual(['FOO=bar', 'DSTACK_TASK_ID=from-shim']);
  });

  it('bind-mounts instance mounts read-write after the runner mounts', () => {
    const { Mounts } = specFor({
      instance_mounts: [{ instance_path: '/mnt/data', path: '/data' }],
    }).body.HostConfig;
    expect(Mounts.at(-1)).toEqual({ Type: 'bind', Source: '/mnt/data', Target: '/data', ReadOnly: false });
  });

  it('publishes the runner port on loopback in bridge mode', () => {
    const { body } = specFor({ network_mode: 'bridge' });
    expect(body.HostConfig.NetworkMode).toBe('bridge');
    expect(body.Cmd.slice(body.Cmd.indexOf('start') + 1)).toEqual([
      '--http-port',
      '10999',
      '--home',
      '/dstack/home',
      '--host',
      '0.0.0.0',
    ]);
    expect(body.ExposedPorts).toEqual({ '10999/tcp': {} });
    expect(body.HostConfig.PortBindings).toEqual({ '10999/tcp': [{ HostIp: '127.0.0.1', HostPort: '' }] });
  });
});

describe('containerNameFor', () => {
  it('keeps only characters Docker accepts in names', () => {
    expect(containerNameFor({ id: 'ab/cd:ef-123456', name: ' my run/0 ' })).toBe('dstack-my-run-0-ab-cd-ef');
  });

  it('leaves out an empty task name', () => {
    expect(containerNameFor({ id: 'abcdef0123', name: '' })).toBe('dstack-abcdef01');
  });

  it('requests exactly the GPUs the task holds, by id', () => {
    expect(specFor({ gpu: 1 }, { gpuIds: ['1'] }).body.HostConfig.DeviceRequests).toEqual([
      { Driver: 'nvidia', DeviceIDs: ['1'], Capabilities: [['gpu']] },
    ]);
    expect(specFor({ gpu: 0 }, { gpuIds: [] }).body.HostConfig.DeviceRequests).toBeUndefined();
  });
});
