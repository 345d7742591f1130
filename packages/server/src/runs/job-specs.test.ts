import { ConfigurationError, runConfigurationSchema } from '@dstack/core';
import { DEFAULT_JOB_IMAGE } from '@dstack/core/agent-protocol';
import { describe, expect, it } from 'vitest';
import type { StoredRunSpec } from '../db/json-columns.js';
import {
  buildJobSpecs,
  DEV_ENVIRONMENT_KEEP_ALIVE,
  initialReplicaJobSpecs,
  planJobSpecs,
} from './job-specs.js';

/** A run spec whose configuration is validated (defaults applied), as the server holds it. */
function runSpecOf(
  configuration: Record<string, unknown>,
  extra: Partial<Omit<StoredRunSpec, 'configuration'>> = {},
): StoredRunSpec {
  return { configuration: runConfigurationSchema.parse(configuration), ...extra };
}

/** dstack's command line in its base image: bash, the venv made and activated, then `commands` (job-commands.test.ts has it whole). */
function inBaseImage(commands: string): unknown[] {
  return [
    '/bin/bash',
    '-i',
    '-c',
    expect.stringContaining(`/bin/activate' | sudo tee -a /dstack/profile) && ${commands}`),
  ];
}

function errorOf(call: () => unknown): ConfigurationError {
  try {
    call();
  } catch (error) {
    if (ConfigurationError.isInstance(error)) return error;
    throw error;
  }
  throw new Error('expected a ConfigurationError');
}

describe('buildJobSpecs', () => {
  it('gives each job its volumes, with dstack.node_rank and dstack.job_num in names interpolated', () => {
    const jobs = buildJobSpecs(
      'train',
      runSpecOf({
        type: 'task',
        commands: ['true'],
        nodes: 2,
        volumes: [
          // biome-ignore lint/suspicious/noTemplateCurlyInString: dstack's variable, interpolated by the server.
          'ckpt-${{ dstack.node_rank }}:/ckpt',
          // biome-ignore lint/suspicious/noTemplateCurlyInString: dstack's variable, interpolated by the server.
          { name: ['cache-${{dstack.job_num}}', 'cache-spare'], path: '/cache' },
          '/mnt/data:/data',
        ],
      }),
    );
    expect(jobs.map((job) => job.volumes)).toEqual([
      [
        { name: 'ckpt-0', path: '/ckpt' },
        { name: ['cache-0', 'cache-spare'], path: '/cache' },
        { instance_path: '/mnt/data', path: '/data', optional: false },
      ],
      [
        { name: 'ckpt-1', path: '/ckpt' },
        { name: ['cache-1', 'cache-spare'], path: '/cache' },
        { instance_path: '/mnt/data', path: '/data', optional: false },
      ],
    ]);
    expect(buildJobSpecs('plain', runSpecOf({ type: 'task', commands: ['true'] }))[0]).not.toHaveProperty(
      'volumes',
    );
    const unknown = errorOf(() =>
      buildJobSpecs(
        'bad',
        // biome-ignore lint/suspicious/noTemplateCurlyInString: dstack's variable, interpolated by the server.
        runSpecOf({ type: 'task', commands: ['true'], volumes: ['v-${{ run.name }}:/v'] }),
      ),
    );
    // biome-ignore lint/suspicious/noTemplateCurlyInString: dstack's variable, interpolated by the server.
    expect(unknown.message).toContain('volumes[0].name: unknown variable ${{ run.name }}');
  });

  it('makes one job per node of a task', () => {
    const jobs = buildJobSpecs(
      'train',
      runSpecOf({ type: 'task', commands: ['python train.py'], nodes: 2, env: { A: '1' } }),
    );
    expect(jobs.map((job) => [job.job_name, job.job_num, job.jobs_per_replica])).toEqual([
      ['train-0-0', 0, 2],
      ['train-1-0', 1, 2],
    ]);
    expect(jobs[0]).toMatchObject({
      commands: inBaseImage('python train.py'),
      env: { A: '1' },
      image_name: DEFAULT_JOB_IMAGE,
      requirements: { multinode: true },
    });
  });

  it("runs a job without `image:` in dstack's base image, from the server's repository, the venv of its `python:`", () => {
    const spec = runSpecOf({ type: 'task', commands: ['true'], python: '3.10' });
    const [job] = buildJobSpecs('py', spec);
    expect(job?.image_name).toBe('dstackai/base:0.15-base-ubuntu24.04');
    expect(job?.commands[3]).toContain('uv venv -q --prompt dstack -p 3.10 --seed $DSTACK_VENV_DIR');
    const mirrored = buildJobSpecs('py', spec, 0, {
      baseImage: '127.0.0.1:5000/dstackai/base',
      version: '0.16',
      ubuntuVersion: '22.04',
    });
    expect(mirrored[0]?.image_name).toBe('127.0.0.1:5000/dstackai/base:0.16-base-ubuntu22.04');
    const devel = runSpecOf({ type: 'task', commands: ['true'], python: '3.11', nvcc: true });
    expect(buildJobSpecs('py', devel)[0]?.image_name).toBe('dstackai/base:0.15-devel-ubuntu24.04');
    const named = buildJobSpecs('py', runSpecOf({ type: 'task', commands: ['true'], image: 'ubuntu' }), 0, {
      baseImage: '127.0.0.1:5000/dstackai/base',
    });
    expect(named[0]?.image_name).toBe('ubuntu');
  });

  it("runs `docker: true` in dstack's dind image, privileged, dockerd started first", () => {
    const spec = runSpecOf({ type: 'task', commands: ['docker info'], docker: true, privileged: false });
    const [job] = buildJobSpecs('dind', spec);
    expect(job).toMatchObject({
      image_name: 'dstackai/dind',
      privileged: true,
      commands: ['/bin/bash', '-i', '-c', 'start-dockerd && docker info'],
    });
    const mirrored = buildJobSpecs('dind', spec, 0, { dindImage: 'mirror:5000/dstackai/dind:v1' });
    expect(mirrored[0]?.image_name).toBe('mirror:5000/dstackai/dind:v1');
  });

  it('refuses an entrypoint no shell could split, naming the field', () => {
    const error = errorOf(() =>
      buildJobSpecs('bad', runSpecOf({ type: 'task', commands: ['x'], entrypoint: "python -c 'open" })),
    );
    expect(error.path).toEqual(['run_spec', 'configuration', 'entrypoint']);
    expect(error.message).toContain('No closing quotation');
  });

  it('refuses an image without commands or entrypoint, whose own command this server does not read', () => {
    const error = errorOf(() => buildJobSpecs('nginx', runSpecOf({ type: 'task', image: 'nginx' })));
    expect(error.path).toEqual(['run_spec', 'configuration', 'commands']);
    expect(error.message).toContain('Please specify either `commands` or `entrypoint`');
    const entrypointOnly = runSpecOf({ type: 'task', image: 'nginx', entrypoint: 'nginx -g "daemon off;"' });
    expect(buildJobSpecs('nginx', entrypointOnly)[0]?.commands).toEqual(['nginx', '-g', 'daemon off;']);
  });

  it("makes one job per provider job, with the job's fields over the configuration's", () => {
    const runSpec = runSpecOf(
      {
        type: 'task',
        provider: './providers/fetch.mjs',
        parameters: { urls: ['a', 'b'] },
        image: 'ubuntu:24.04',
        working_dir: '/work',
        env: { SHARED: 'yes', MODE: 'configuration' },
        resources: { cpu: '4..', memory: '1GB..' },
        retry: { on_events: ['error'], duration: '1h' },
        max_duration: '2h',
        stop_duration: '30s',
        ports: [8080],
      },
      {
        provider_jobs: [
          { name: 'fetch-a', commands: ['curl a -o a'], env: { MODE: 'job' } },
          { commands: ['curl b -o b', 'sha256sum b'], image: 'curlimages/curl', working_dir: '/data' },
        ],
      },
    );
    const jobs = buildJobSpecs('fetch', runSpec);
    expect(jobs).toHaveLength(2);
    expect(jobs[0]).toMatchObject({
      job_name: 'fetch-0-0',
      job_num: 0,
      jobs_per_replica: 2,
      commands: ['/bin/sh', '-i', '-c', 'curl a -o a'],
      env: { SHARED: 'yes', MODE: 'job' },
      image_name: 'ubuntu:24.04',
      working_dir: '/work',
    });
    expect(jobs[1]).toMatchObject({
      job_name: 'fetch-1-0',
      job_num: 1,
      commands: ['/bin/sh', '-i', '-c', 'curl b -o b && sha256sum b'],
      env: { SHARED: 'yes', MODE: 'configuration' },
      image_name: 'curlimages/curl',
      working_dir: '/data',
    });
    for (const job of jobs) {
      expect(job).toMatchObject({
        max_duration: 7200,
        stop_duration: 30,
        retry: { on_events: ['error'], duration: 3600 },
        ports: [8080],
        requirements: { multinode: false, resources: { cpu: { count: { min: 4, max: null } } } },
      });
    }
  });

  it('rejects a provider without provider_jobs, naming provider_jobs', () => {
    const error = errorOf(() =>
      buildJobSpecs('fetch', runSpecOf({ type: 'task', provider: './providers/curl.mjs' })),
    );
    expect(error.path).toEqual(['run_spec', 'provider_jobs']);
    expect(error.message).toContain(
      "names provider './providers/curl.mjs' but the run spec has no provider_jobs",
    );
  });

  it('rejects provider_jobs without a provider', () => {
    const error = errorOf(() =>
      buildJobSpecs(
        'plain',
        runSpecOf({ type: 'task', commands: ['true'] }, { provider_jobs: [{ commands: ['x'] }] }),
      ),
    );
    expect(error.path).toEqual(['run_spec', 'provider_jobs']);
  });

  it("runs a dev environment's setup and init, then keeps it up until it is stopped", () => {
    const [job, ...others] = buildJobSpecs(
      'dev',
      runSpecOf({
        type: 'dev-environment',
        ide: 'vscode',
        setup: ['apt-get update'],
        init: ['pip install -r requirements.txt', 'echo ready'],
        ports: [8888],
      }),
    );
    expect(others).toEqual([]);
    expect(job).toMatchObject({
      job_name: 'dev-0-0',
      commands: inBaseImage(
        'apt-get update && pip install -r requirements.txt && echo ready && tail -f /dev/null',
      ),
      ports: [8888],
    });
  });

  it('keeps a dev environment without init up', () => {
    const [job] = buildJobSpecs('bare', runSpecOf({ type: 'dev-environment' }));
    expect(job?.commands).toEqual(inBaseImage(DEV_ENVIRONMENT_KEEP_ALIVE));
  });

  it("clones a task's branch only and every branch for a dev environment, unless single_branch says", () => {
    const repo = {
      repo_id: 'repo-1',
      repo_data: { repo_type: 'remote' as const, repo_name: 'repo', repo_branch: 'main', repo_hash: 'abc' },
    };
    const singleBranch = (configuration: Record<string, unknown>) =>
      buildJobSpecs('r', runSpecOf({ ...configuration, repos: ['.'] }, repo))[0]?.single_branch;
    expect(singleBranch({ type: 'task', commands: ['true'] })).toBe(true);
    expect(singleBranch({ type: 'dev-environment' })).toBe(false);
    expect(singleBranch({ type: 'dev-environment', single_branch: true })).toBe(true);
    expect(singleBranch({ type: 'task', commands: ['true'], single_branch: false })).toBe(false);
    expect(
      buildJobSpecs('r', runSpecOf({ type: 'task', commands: ['true'] }))[0]?.single_branch,
    ).toBeUndefined();
  });

  it("builds a replica group's jobs from the service with the group's own commands, resources and image", () => {
    const runSpec = runSpecOf({
      type: 'service',
      port: 8000,
      python: '3.11',
      spot_policy: 'auto',
      replicas: [
        { name: 'gpu', count: 1, commands: ['serve --gpu'], resources: { gpu: 'A100:1' } },
        {
          count: '0..2',
          scaling: { metric: 'rps', target: 5 },
          image: 'ghcr.io/acme/cpu:1',
          commands: ['serve'],
        },
      ],
    });
    const [gpu] = buildJobSpecs('svc', runSpec, 3, {}, 'gpu');
    expect(gpu).toMatchObject({
      job_name: 'svc-0-3',
      replica_num: 3,
      replica_group: 'gpu',
      commands: inBaseImage('serve --gpu'),
      image_name: DEFAULT_JOB_IMAGE,
      requirements: { spot: null, resources: { gpu: { name: ['A100'] } } },
    });
    const [cpu] = buildJobSpecs('svc', runSpec, 4, {}, '1');
    expect(cpu).toMatchObject({
      replica_group: '1',
      commands: ['/bin/sh', '-i', '-c', 'serve'],
      image_name: 'ghcr.io/acme/cpu:1',
    });
    expect(cpu?.requirements.resources.gpu).toEqual(
      runConfigurationSchema.parse({ type: 'task', commands: ['x'] }).resources.gpu,
    );
    expect(() => buildJobSpecs('svc', runSpec, 0, {}, 'missing')).toThrow(
      "the service has no replica group 'missing'",
    );

    // The plan shows replica 0 of each group; a new service starts each group's minimum, numbered on.
    expect(planJobSpecs('svc', runSpec).map((job) => [job.replica_group, job.replica_num])).toEqual([
      ['gpu', 0],
      ['1', 0],
    ]);
    const service = runSpec.configuration;
    if (service.type !== 'service') throw new Error('a service');
    expect(
      initialReplicaJobSpecs('svc', runSpec, service).map((job) => [job.replica_group, job.replica_num]),
    ).toEqual([['gpu', 0]]);
  });

  it("puts a service without groups in dstack's default group 0, and a task in none", () => {
    const [service] = buildJobSpecs(
      'svc',
      runSpecOf({ type: 'service', port: 80, commands: ['x'], replicas: 2 }),
    );
    expect(service?.replica_group).toBe('0');
    const [task] = buildJobSpecs('t', runSpecOf({ type: 'task', commands: ['x'] }));
    expect(task).not.toHaveProperty('replica_group');
  });
});
