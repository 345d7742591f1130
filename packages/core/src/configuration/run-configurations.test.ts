import { describe, expect, test } from 'vitest';
import { envSchema, MAX_ENV_VALUE_LENGTH } from './env.js';
import { mountPointSchema } from './mount-point.js';
import { anyConfigurationSchema, parseConfiguration } from './parse-configuration.js';
import { portMappingSchema, servicePortSchema } from './ports.js';
import { repoSpecSchema } from './run-configuration-base.js';

/** Parses and checks that the result survives JSON, as API bodies must. */
function parse(text: string) {
  const configuration = parseConfiguration(text, { path: 'test.dstack.yml' });
  expect(anyConfigurationSchema.parse(JSON.parse(JSON.stringify(configuration)))).toEqual(configuration);
  return configuration;
}

describe('env', () => {
  test.each([
    [['A=1', 'B', 'C=x=y', 'D='], { A: '1', B: null, C: 'x=y', D: '' }],
    [
      { A: 1, B: 'two', C: null, D: true },
      { A: '1', B: 'two', C: null, D: 'true' },
    ],
    [[], {}],
  ])('%j → %j', (input, expected) => {
    expect(envSchema.parse(input)).toEqual(expected);
  });

  test('refuses a value longer than Linux passes to a process (128 KiB), naming the variable', () => {
    expect(envSchema.safeParse({ OK: 'x'.repeat(MAX_ENV_VALUE_LENGTH) }).success).toBe(true);
    expect(envSchema.safeParse({ BIG: 'x'.repeat(MAX_ENV_VALUE_LENGTH + 1) }).error?.issues[0]).toMatchObject(
      {
        message: `a value must be at most ${MAX_ENV_VALUE_LENGTH} characters`,
        path: ['BIG'],
      },
    );
  });

  test('rejects duplicates, bad names and other shapes', () => {
    expect(envSchema.safeParse(['A=1', 'A=2']).error?.issues[0]).toMatchObject({
      message: "variable 'A' is set twice",
      path: [1],
    });
    expect(envSchema.safeParse({ 'BAD-NAME': 'x' }).success).toBe(false);
    expect(envSchema.safeParse('A=1').success).toBe(false);
    expect(envSchema.safeParse([{ A: 1 }]).error?.issues[0]?.message).toBe(
      "expected 'NAME=value' or 'NAME', got a mapping",
    );
  });
});

describe('volumes', () => {
  test.each([
    ['my-volume:/data', { name: 'my-volume', path: '/data' }],
    ['/mnt/cache:/root/.cache', { instance_path: '/mnt/cache', path: '/root/.cache', optional: false }],
    [
      { name: 'v', path: '/v' },
      { name: 'v', path: '/v' },
    ],
    [
      { name: ['v-aws', 'v-gcp'], path: '/v' },
      { name: ['v-aws', 'v-gcp'], path: '/v' },
    ],
    [
      { instance_path: '/a', path: '/b', optional: true },
      { instance_path: '/a', path: '/b', optional: true },
    ],
  ])('%j', (input, expected) => {
    expect(mountPointSchema.parse(input)).toEqual(expected);
  });

  test.each([
    ['no-colon', 'invalid volume'],
    ['a:/b:/c', 'invalid volume'],
    ['v:/a/../b', "must not contain '..'"],
  ])('%j is rejected', (input, message) => {
    expect(mountPointSchema.safeParse(input).error?.issues[0]?.message).toContain(message);
  });
});

describe('ports', () => {
  test.each([
    [8080, { local_port: 8080, container_port: 8080 }],
    ['8080', { local_port: 8080, container_port: 8080 }],
    ['80:8080', { local_port: 80, container_port: 8080 }],
    ['*:8080', { local_port: null, container_port: 8080 }],
    [
      { local_port: 1, container_port: 2 },
      { local_port: 1, container_port: 2 },
    ],
  ])('%j', (input, expected) => {
    expect(portMappingSchema.parse(input)).toEqual(expected);
  });

  test('a service port N means 80 → N', () => {
    expect(servicePortSchema.parse(8000)).toEqual({ local_port: 80, container_port: 8000 });
    expect(servicePortSchema.parse('8443:8000')).toEqual({ local_port: 8443, container_port: 8000 });
  });

  test.each([0, 70_000, 'x', '1:2:3'])('%j is rejected', (input) => {
    expect(portMappingSchema.safeParse(input).success).toBe(false);
  });
});

describe('repos', () => {
  test.each([
    ['..', { local_path: '..', path: '.', if_exists: 'error' }],
    ['.:/workflow', { local_path: '.', path: '/workflow', if_exists: 'error' }],
    [
      'https://github.com/dstackai/dstack',
      { url: 'https://github.com/dstackai/dstack', path: '.', if_exists: 'error' },
    ],
    [
      'git@github.com:dstackai/dstack.git:/repo',
      { url: 'git@github.com:dstackai/dstack.git', path: '/repo', if_exists: 'error' },
    ],
    ['C:\\code\\repo', { local_path: 'C:\\code\\repo', path: '.', if_exists: 'error' }],
  ])('%j', (input, expected) => {
    expect(repoSpecSchema.parse(input)).toEqual(expected);
  });

  test('local_path and url are exclusive', () => {
    expect(repoSpecSchema.safeParse({ local_path: '.', url: 'https://x/y' }).success).toBe(false);
    expect(repoSpecSchema.safeParse({ branch: 'main' }).success).toBe(false);
  });
});

describe('task', () => {
  test('defaults', () => {
    expect(parse('type: task\ncommands: [train]\n')).toEqual({
      type: 'task',
      commands: ['train'],
      privileged: false,
      home_dir: '/root',
      env: {},
      resources: {
        cpu: { count: { min: 2, max: null } },
        memory: { min: 8, max: null },
        gpu: { count: { min: 0, max: null } },
        disk: { size: { min: 100, max: null } },
      },
      volumes: [],
      repos: [],
      files: [],
      dstack: false,
      setup: [],
      ports: [],
    });
  });

  test('profile fields, durations and retry', () => {
    const task = parse(
      [
        'type: task',
        'image: ubuntu',
        'max_duration: 2h',
        'stop_duration: off',
        'idle_duration: 90s',
        'retry: true',
        'spot_policy: auto',
        'max_price: 1.5',
        'backends: [aws, gcp]',
        'creation_policy: reuse',
        'utilization_policy: {min_gpu_utilization: 10, time_window: 30m}',
        'schedule: {cron: "0 8 * * *"}',
        'fleets: [my-fleet, other-project/fleet]',
        'instances: [worker-1, {hostname: 10.0.0.5}, {fleet: f, instance: 0}]',
        'tags: {team: ml, cost: 1}',
        'backend_options: [{type: aws, something: true}]',
        'files: ["data:/data", train.py]',
        'startup_order: master-first',
        'stop_criteria: master-done',
      ].join('\n'),
    );
    expect(task).toMatchObject({
      max_duration: 7200,
      stop_duration: 'off',
      idle_duration: 90,
      retry: { on_events: ['no-capacity', 'interruption', 'error'], duration: 3600 },
      spot_policy: 'auto',
      max_price: 1.5,
      backends: ['aws', 'gcp'],
      creation_policy: 'reuse',
      utilization_policy: { min_gpu_utilization: 10, time_window: 1800 },
      schedule: { cron: ['0 8 * * *'] },
      fleets: ['my-fleet', 'other-project/fleet'],
      instances: [{ name: 'worker-1' }, { hostname: '10.0.0.5' }, { fleet: 'f', instance: 0 }],
      tags: { team: 'ml', cost: '1' },
      backend_options: [{ type: 'aws', something: true }],
      files: [
        { local_path: 'data', path: '/data' },
        { local_path: 'train.py', path: 'train.py' },
      ],
    });
  });

  test('retry forms', () => {
    expect(
      parse('type: task\nimage: x\nretry: false').type === 'task' &&
        parse('type: task\nimage: x\nretry: false'),
    ).toMatchObject({
      retry: false,
    });
    expect(parse('type: task\nimage: x\nretry: {on_events: [no-capacity], duration: 1d}')).toMatchObject({
      retry: { on_events: ['no-capacity'], duration: 86_400 },
    });
    expect(() => parse('type: task\nimage: x\nretry: {on_events: []}')).toThrow('on_events cannot be empty');
    expect(() =>
      parse('type: task\nimage: x\nutilization_policy: {min_gpu_utilization: 10, time_window: 1m}'),
    ).toThrow('the minimum time_window is 5m');
  });

  test('node groups', () => {
    const task = parse(
      'type: task\nimage: x\ngroups:\n  - name: head\n    commands: [a]\n  - nodes: 3\n    resources: {gpu: H100:8}\n',
    );
    expect(task.type === 'task' && task.groups?.map((group) => [group.name, group.nodes])).toEqual([
      ['head', 1],
      [undefined, 3],
    ]);
    expect(() => parse('type: task\nimage: x\nnodes: 2\ngroups: [{commands: [a]}]')).toThrow(
      "'nodes' and 'groups' are mutually exclusive",
    );
    expect(() => parse('type: task\ngroups: [{nodes: 1}]')).toThrow("node group '0' needs 'commands'");
    expect(() => parse('type: task\nimage: x\nnodes: 0')).toThrow('must be at least 1');
  });

  describe('with a provider', () => {
    /** The `ConfigurationError` of `text`, for its message, path and position. */
    function errorOf(text: string) {
      try {
        parse(text);
      } catch (error) {
        return error as { message: string; path: unknown; line: number; column: number };
      }
      throw new Error('expected the configuration to be invalid');
    }

    test('needs no commands and keeps provider and parameters as written', () => {
      const task = parse(
        'type: task\nprovider: ./providers/curl.mjs\nparameters:\n  url: https://example.com/a\n  output: a.txt\n  retries: 3\n',
      );
      expect(task).toMatchObject({
        provider: './providers/curl.mjs',
        parameters: { url: 'https://example.com/a', output: 'a.txt', retries: 3 },
        commands: [],
      });
      expect(parse('type: task\nprovider: "@acme/provider"\n')).not.toHaveProperty('parameters');
    });

    test('rejects commands, nodes and groups, naming the field', () => {
      expect(errorOf('type: task\nprovider: ./p.mjs\ncommands: [echo hi]\n')).toMatchObject({
        message: "'commands' and 'provider' are mutually exclusive: the provider creates the commands",
        path: ['commands'],
        line: 3,
        column: 11,
      });
      expect(errorOf('type: task\nprovider: ./p.mjs\nnodes: 2\n')).toMatchObject({ path: ['nodes'] });
      expect(errorOf('type: task\nprovider: ./p.mjs\ngroups: [{commands: [a]}]\n')).toMatchObject({
        path: ['groups'],
      });
    });

    test('rejects parameters without a provider, and parameters that are not a mapping', () => {
      expect(errorOf('type: task\ncommands: [a]\nparameters: {url: x}\n')).toMatchObject({
        message: "'parameters' needs 'provider'",
        path: ['parameters'],
        line: 3,
      });
      expect(errorOf('type: task\nprovider: ./p.mjs\nparameters: [a]\n')).toMatchObject({
        message: 'expected a mapping, got a list',
        path: ['parameters'],
      });
      expect(errorOf('type: task\nprovider: ""\n')).toMatchObject({ path: ['provider'] });
    });
  });
});

describe('service', () => {
  test('replicas range with scaling, gateway, model, probes and rate limits', () => {
    const service = parse(
      [
        'type: service',
        'image: vllm',
        'port: 8000',
        'replicas: 1..4',
        'scaling: {metric: rps, target: 10}',
        'gateway: my-gateway',
        'https: auto',
        'model: {name: llama, format: tgi}',
        'probes: [{type: http, url: /health}]',
        'rate_limits: [{rps: 5}, {prefix: /api, key: {type: header, header: X-Key}, rps: 1, burst: 3}]',
      ].join('\n'),
    );
    expect(service).toMatchObject({
      replicas: { min: 1, max: 4 },
      scaling: { metric: 'rps', target: 10, scale_up_delay: 300, scale_down_delay: 600 },
      gateway: 'my-gateway',
      https: 'auto',
      strip_prefix: true,
      auth: true,
      model: { type: 'chat', name: 'llama', format: 'tgi' },
      probes: [
        {
          type: 'http',
          url: '/health',
          method: 'get',
          headers: [],
          timeout: 10,
          interval: 15,
          ready_after: 1,
          until_ready: false,
        },
      ],
      rate_limits: [
        { prefix: '/', key: { type: 'ip_address' }, rps: 5, burst: 0 },
        { prefix: '/api', key: { type: 'header', header: 'X-Key' }, rps: 1, burst: 3 },
      ],
    });
  });

  test('replica groups', () => {
    const service = parse(
      [
        'type: service',
        'port: 8000',
        'replicas:',
        '  - name: prefill',
        '    count: 1..2',
        '    scaling: {metric: rps, target: 5}',
        '    image: sglang',
        '  - replicas: 1',
        '    commands: [serve]',
        '    resources: {gpu: 24GB}',
      ].join('\n'),
    );
    expect(
      service.type === 'service' && Array.isArray(service.replicas) && service.replicas.map((g) => g.count),
    ).toEqual([
      { min: 1, max: 2 },
      { min: 1, max: 1 },
    ]);
    expect(() =>
      parse('type: service\nport: 80\nimage: x\nreplicas: 2\nscaling: {metric: rps, target: 1}'),
    ).toThrow("'scaling' needs 'replicas' to be a range");
    expect(() => parse('type: service\nport: 80\nimage: x\nreplicas: 1..')).toThrow(
      'the maximum number of replicas is required',
    );
    expect(() =>
      parse('type: service\nport: 80\ncommands: [a]\nreplicas: [{count: 1, commands: [b]}]'),
    ).toThrow("with replica groups, set 'commands' in each group");
    expect(() =>
      parse('type: service\nport: 80\nimage: x\nreplicas: [{count: 1, python: 3.12, image: y}]'),
    ).toThrow('mutually exclusive within a replica group');
  });

  test('gateway forms', () => {
    expect(parse('type: service\nport: 80\nimage: x\ngateway: false')).toMatchObject({ gateway: false });
    expect(parse('type: service\nport: 80\nimage: x\ngateway: {project: p, name: g}')).toMatchObject({
      gateway: 'p/g',
    });
  });
});

describe('dev-environment', () => {
  test('ide, init, inactivity_duration and ports', () => {
    expect(
      parse(
        'type: dev-environment\nide: vscode\ninit: [pip install x]\ninactivity_duration: 2h\nports: ["*:3000"]',
      ),
    ).toMatchObject({
      ide: 'vscode',
      init: ['pip install x'],
      inactivity_duration: 7200,
      ports: [{ local_port: null, container_port: 3000 }],
    });
    expect(parse('type: dev-environment\ninactivity_duration: off')).toMatchObject({
      inactivity_duration: 'off',
    });
    expect(() => parse('type: dev-environment\nide: vim')).toThrow(
      'expected one of vscode, cursor, windsurf, zed',
    );
    expect(() => parse('type: dev-environment\nentrypoint: bash')).toThrow("'entrypoint' is not supported");
    expect(() => parse('type: dev-environment\nversion: "1.0"')).toThrow("'version' needs 'ide'");
  });
});

describe('fleet', () => {
  test.each([
    ['2', { min: 2, target: 2, max: 2 }],
    ['"0..2"', { min: 0, target: 0, max: 2 }],
    ['"1.."', { min: 1, target: 1, max: null }],
    ['{min: 1, target: 2, max: 4}', { min: 1, target: 2, max: 4 }],
    ['{max: 3}', { min: 0, target: 0, max: 3 }],
  ])('nodes: %s', (nodes, expected) => {
    expect(parse(`type: fleet\nnodes: ${nodes}`)).toMatchObject({ nodes: expected });
  });

  test('ssh fleets, blocks and placement', () => {
    const fleet = parse(
      [
        'type: fleet',
        'placement: cluster',
        'blocks: auto',
        'ssh_config:',
        '  user: ubuntu',
        '  identity_file: ~/.ssh/id_rsa',
        '  proxy_jump: {hostname: bastion, user: me, identity_file: ~/.ssh/b}',
        '  network: 10.0.0.0/24',
        '  hosts:',
        '    - 10.0.0.1',
        '    - {hostname: 10.0.0.2, port: 2222, blocks: 2}',
      ].join('\n'),
    );
    expect(fleet).toMatchObject({
      placement: 'cluster',
      blocks: 'auto',
      ssh_config: {
        user: 'ubuntu',
        network: '10.0.0.0/24',
        hosts: ['10.0.0.1', { hostname: '10.0.0.2', port: 2222, blocks: 2 }],
      },
    });
    expect(parse('type: fleet\nnodes: 1')).toMatchObject({ blocks: 1, env: {} });
    expect(() => parse('type: fleet\nnodes: 1\nssh_config: {hosts: [a]}')).toThrow(
      "'nodes' and 'ssh_config' are mutually exclusive",
    );
    expect(() => parse('type: fleet\nblocks: 0')).toThrow('must be at least 1');
  });

  test('proxy_jump: fleet-wide and per host, with the key content the CLI adds', () => {
    const fleet = parse(
      [
        'type: fleet',
        'ssh_config:',
        '  user: ubuntu',
        '  proxy_jump: {hostname: bastion, user: me, identity_file: ~/.ssh/b, ssh_key: {private: KEY}}',
        '  hosts:',
        '    - 10.0.0.1',
        '    - hostname: 10.0.0.2',
        '      proxy_jump: {hostname: other, port: 2222, user: you, identity_file: ~/.ssh/o}',
      ].join('\n'),
    );
    expect(fleet).toMatchObject({
      ssh_config: {
        proxy_jump: {
          hostname: 'bastion',
          user: 'me',
          identity_file: '~/.ssh/b',
          ssh_key: { private: 'KEY' },
        },
        hosts: [
          '10.0.0.1',
          { hostname: '10.0.0.2', proxy_jump: { hostname: 'other', port: 2222, user: 'you' } },
        ],
      },
    });
    const proxyErrorPath = (proxy: string) => {
      try {
        parse(`type: fleet\nssh_config:\n  proxy_jump: ${proxy}\n  hosts: [a]`);
      } catch (error) {
        return (error as { path?: unknown }).path;
      }
      throw new Error(`proxy_jump ${proxy} was accepted`);
    };
    expect(proxyErrorPath('{user: me, identity_file: k}')).toEqual(['ssh_config', 'proxy_jump', 'hostname']);
    expect(proxyErrorPath('{hostname: b, user: me, identity_file: k, ssh_key: {public: p}}')).toEqual([
      'ssh_config',
      'proxy_jump',
      'ssh_key',
      'private',
    ]);
    expect(proxyErrorPath('{hostname: b, user: me, identity_file: k, port: 0}')).toEqual([
      'ssh_config',
      'proxy_jump',
      'port',
    ]);
  });
});

describe('volume and gateway', () => {
  test('volume', () => {
    expect(
      parse(
        'type: volume\nbackend: aws\nregion: us-east-1\nsize: 1TB\nauto_cleanup_duration: 1w\ntags: {a: b}',
      ),
    ).toEqual({
      type: 'volume',
      backend: 'aws',
      region: 'us-east-1',
      size: 1024,
      auto_cleanup_duration: 604_800,
      tags: { a: 'b' },
    });
    expect(() => parse('type: volume\nbackend: aws\nregion: us-east-1')).toThrow("either 'size'");
    expect(() => parse('type: volume\nbackend: AWS\nregion: r\nsize: 1')).toThrow('expected a backend name');
  });

  test('gateway', () => {
    expect(
      parse(
        'type: gateway\nbackend: gcp\nregion: europe-west4\ndefault: true\ncertificate: {type: acm, arn: "arn:x"}',
      ),
    ).toMatchObject({
      default: true,
      certificate: { type: 'acm', arn: 'arn:x' },
      public_ip: true,
      replicas: 1,
    });
    expect(parse('type: gateway\nbackend: gcp\nregion: r\ncertificate: null')).toMatchObject({
      certificate: null,
    });
    expect(() => parse('type: gateway\nregion: r')).toThrow("required field 'backend' is missing");
  });
});
