import { readdirSync, readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { describe, expect, test } from 'vitest';
import { ConfigurationError } from '../errors.js';
import {
  type AnyConfiguration,
  anyConfigurationSchema,
  formatConfigurationError,
  parseConfiguration,
  validateConfiguration,
  validateConfigurationOfType,
} from './index.js';

const EXAMPLES_DIR =
  process.env.DSTACK_EXAMPLES_DIR ?? fileURLToPath(new URL('../../../../examples/dstack/', import.meta.url));
const exampleFiles = readdirSync(EXAMPLES_DIR).filter((name) => /\.dstack\.ya?ml$/.test(name));

function parseExample(name: string): AnyConfiguration {
  return parseConfiguration(readFileSync(`${EXAMPLES_DIR}/${name}`, 'utf8'), { path: name });
}

/** What a client would send after reading a parsed configuration back from JSON. */
function viaJson<T>(value: T): unknown {
  return JSON.parse(JSON.stringify(value));
}

function parseError(text: string): ConfigurationError {
  try {
    parseConfiguration(text, { path: 'app.dstack.yml' });
  } catch (error) {
    if (ConfigurationError.isInstance(error)) return error;
    throw error;
  }
  throw new Error(`expected a ConfigurationError for:\n${text}`);
}

describe('dstack examples', () => {
  test('the examples directory has files', () => {
    expect(exampleFiles.length).toBeGreaterThan(20);
  });

  test.each(exampleFiles)('%s parses and round-trips through JSON', (name) => {
    const parsed = parseExample(name);
    expect(anyConfigurationSchema.parse(viaJson(parsed))).toEqual(parsed);
    expect(validateConfiguration(viaJson(parsed))).toEqual(parsed);
  });

  test('spot checks', () => {
    const rayFleet = parseExample('misc__ray__fleet.dstack.yaml');
    expect(rayFleet.type === 'fleet' && rayFleet.nodes).toEqual({ min: 4, target: 4, max: 4 });
    expect(rayFleet.type === 'fleet' && rayFleet.resources?.cpu).toEqual({ count: { min: 8, max: null } });

    const elastic = parseExample('docs__concepts__fleet_backend_elastic.dstack.yml');
    expect(elastic.type === 'fleet' && [elastic.nodes, elastic.idle_duration]).toEqual([
      { min: 0, target: 0, max: 2 },
      3600,
    ]);

    const ssh = parseExample('docs__concepts__fleet_ssh.dstack.yml');
    expect(ssh.type === 'fleet' && ssh.ssh_config?.hosts).toEqual(['3.255.177.51', '3.255.177.52']);

    const amd = parseExample('llms__deepseek__trl__amd__.dstack.yml');
    expect(amd.type === 'task' && amd.resources.gpu).toEqual({
      vendor: 'amd',
      name: ['MI300X'],
      count: { min: 1, max: null },
    });
    expect(amd.type === 'task' && amd.resources.disk).toEqual({ size: { min: 150, max: 150 } });
    expect(amd.type === 'task' && amd.env).toEqual({
      WANDB_API_KEY: null,
      WANDB_PROJECT: null,
      MODEL_ID: 'deepseek-ai/DeepSeek-R1-Distill-Qwen-1.5B',
    });

    const tpu = parseExample('single-node-training__optimum-tpu__llama31__.dstack.yml');
    expect(tpu.type === 'task' && tpu.resources.gpu.vendor).toBe('google');

    const gptOss = parseExample('models__gpt-oss__amd__120b.dstack.yml');
    expect(gptOss.type).toBe('service');
    if (gptOss.type === 'service') {
      expect(gptOss.port).toEqual({ local_port: 80, container_port: 8000 });
      expect(gptOss.model).toEqual({
        type: 'chat',
        name: 'openai/gpt-oss-120b',
        format: 'openai',
        prefix: '/v1',
      });
      expect(gptOss.volumes).toEqual([
        { instance_path: '/root/.cache/huggingface', path: '/root/.cache/huggingface', optional: false },
      ]);
      expect(gptOss.resources.gpu.count).toEqual({ min: 8, max: 8 });
      expect(gptOss.resources.shm_size).toBe(32);
    }

    const torchrun = parseExample('distributed-training__torchrun__.dstack.yml');
    expect(
      torchrun.type === 'task' && [torchrun.nodes, torchrun.python, torchrun.resources.gpu.count],
    ).toEqual([2, '3.12', { min: 1, max: 8 }]);

    const deepseekV2 = parseExample('llms__deepseek__trl__nvidia__deepseek_v2.dstack.yml');
    expect(deepseekV2.type === 'task' && [deepseekV2.python, deepseekV2.nvcc]).toEqual(['3.10', true]);

    const cursor = parseExample('root__.dstack.yml');
    expect(cursor.type === 'dev-environment' && [cursor.ide, cursor.repos]).toEqual([
      'cursor',
      [{ local_path: '..', path: '.', if_exists: 'error' }],
    ]);

    const gateway = parseExample('docs__concepts__gateway_aws.dstack.yml');
    expect(gateway).toMatchObject({ backend: 'aws', public_ip: true, certificate: { type: 'lets-encrypt' } });

    const volume = parseExample('docs__concepts__volume_aws_new.dstack.yml');
    expect(volume).toMatchObject({ type: 'volume', backend: 'aws', region: 'eu-central-1', size: 100 });

    const withVolume = parseExample('docs__concepts__dev_env_with_volume.dstack.yml');
    expect(withVolume.type === 'dev-environment' && withVolume.volumes).toEqual([
      { name: 'my-volume', path: '/volume_data' },
    ]);
  });
});

describe('invalid configurations', () => {
  test.each([
    {
      name: 'unknown field nested three deep',
      text: 'type: task\ncommands: [train]\nresources:\n  gpu:\n    nme: A100\n',
      line: 5,
      column: 5,
      path: ['resources', 'gpu', 'nme'],
      message: "unknown field 'nme' in resources.gpu; did you mean 'name'?",
    },
    {
      name: 'unknown field with a suggestion',
      text: 'type: task\ncommands: [train]\nresources:\n  gpus: 2\n',
      line: 4,
      column: 3,
      path: ['resources', 'gpus'],
      message: "unknown field 'gpus' in resources; did you mean 'gpu'?",
    },
    {
      name: 'unknown top-level field',
      text: 'type: service\nport: 8000\nimage: nginx\nreplica: 2\n',
      line: 4,
      column: 1,
      path: ['replica'],
      message: "unknown field 'replica' in the service configuration; did you mean 'replicas'?",
    },
    {
      name: 'wrong type',
      text: 'type: task\ncommands: [train]\nprivileged: yes\n',
      line: 3,
      column: 13,
      path: ['privileged'],
      message: "expected true or false, got 'yes'",
    },
    {
      name: 'bad GPU spec',
      text: 'type: task\ncommands: [train]\nresources:\n  gpu: A100:foo\n',
      line: 4,
      column: 8,
      path: ['resources', 'gpu'],
      message:
        "invalid GPU spec 'A100:foo': expected a vendor (nvidia, amd, tpu, intel), GPU names, memory (e.g. 80GB or 24GB..) or a count (e.g. 2 or 1..8); 'foo' repeats the GPU names ('A100')",
    },
    {
      name: 'mismatched GPU vendor',
      text: 'type: task\ncommands: [train]\nresources:\n  gpu: amd:H100:8\n',
      line: 4,
      column: 8,
      path: ['resources', 'gpu'],
      message: "GPU 'H100' is made by nvidia, not amd",
    },
    {
      name: 'reversed range',
      text: 'type: task\ncommands: [train]\nresources:\n  cpu: 8..2\n',
      line: 4,
      column: 8,
      path: ['resources', 'cpu'],
      message: "invalid range '8..2': the minimum is greater than the maximum",
    },
    {
      name: 'reversed range in a GPU string',
      text: 'type: task\ncommands: [train]\nresources:\n  gpu: A100:8..2\n',
      line: 4,
      column: 8,
      path: ['resources', 'gpu'],
      message: "invalid range '8..2': the minimum is greater than the maximum",
    },
    {
      name: 'bad duration',
      text: 'type: task\ncommands: [train]\nmax_duration: 3 days\n',
      line: 3,
      column: 15,
      path: ['max_duration'],
      message:
        "invalid duration '3 days': expected seconds or a number with a unit s, m, h, d or w (e.g. 90s, 30m, 1h, 2d), or off",
    },
    {
      name: 'image and python',
      text: 'type: task\nimage: ubuntu\npython: "3.12"\ncommands: [train]\n',
      line: 3,
      column: 9,
      path: ['python'],
      message: "'image' and 'python' are mutually exclusive",
    },
    {
      name: 'python and docker',
      text: 'type: task\npython: 3.11\ndocker: true\ncommands: [train]\n',
      line: 3,
      column: 9,
      path: ['docker'],
      message: "'python' and 'docker' are mutually exclusive",
    },
    {
      name: 'unsupported python',
      text: 'type: task\npython: 3.8\ncommands: [train]\n',
      line: 2,
      column: 9,
      path: ['python'],
      message: "expected one of 3.9, 3.10, 3.11, 3.12, 3.13, 3.14; got '3.8'",
    },
    {
      name: 'unknown type',
      text: 'type: tsk\ncommands: [train]\n',
      line: 1,
      column: 7,
      path: ['type'],
      message:
        "unknown configuration type 'tsk': expected one of task, service, dev-environment, fleet, volume, gateway; did you mean 'task'?",
    },
    {
      name: 'missing type',
      text: 'name: x\ncommands: [train]\n',
      line: 1,
      column: 1,
      path: ['type'],
      message: "missing field 'type': expected one of task, service, dev-environment, fleet, volume, gateway",
    },
    {
      name: 'YAML syntax error',
      text: 'type: task\ncommands:\n  - train\n  bad: [\n',
      line: 4,
      column: 1,
      path: [],
      message: 'invalid YAML: All mapping items must start at the same column',
    },
    {
      name: 'YAML duplicate key',
      text: 'type: task\ncommands: [train]\ncommands: [again]\n',
      line: 3,
      column: 1,
      path: [],
      message: 'invalid YAML: Map keys must be unique',
    },
    {
      name: 'empty file',
      text: '',
      line: 1,
      column: 1,
      path: [],
      message:
        "the configuration is empty; expected a mapping with 'type' (one of task, service, dev-environment, fleet, volume, gateway)",
    },
    {
      name: 'comments only',
      text: '# nothing here\n',
      line: 1,
      column: 1,
      path: [],
      message:
        "the configuration is empty; expected a mapping with 'type' (one of task, service, dev-environment, fleet, volume, gateway)",
    },
    {
      name: 'non-mapping root',
      text: '- type: task\n',
      line: 1,
      column: 1,
      path: [],
      message: 'expected a mapping at the top level, got a list',
    },
    {
      name: 'missing required field',
      text: 'type: service\nimage: nginx\n',
      line: 1,
      column: 1,
      path: ['port'],
      message: "required field 'port' is missing",
    },
    {
      name: 'bad env entry in a list',
      text: 'type: task\ncommands: [train]\nenv:\n  - A=1\n  - 2B=3\n',
      line: 5,
      column: 5,
      path: ['env', 1],
      message: "invalid variable name '2B' in '2B=3'",
    },
    {
      name: 'bad enum value',
      text: 'type: task\ncommands: [train]\nspot_policy: spott\n',
      line: 3,
      column: 14,
      path: ['spot_policy'],
      message: "expected one of spot, on-demand, auto; got 'spott'",
    },
    {
      name: 'relative volume path',
      text: 'type: task\ncommands: [train]\nvolumes:\n  - my-volume:data\n',
      line: 4,
      column: 5,
      path: ['volumes', 0],
      message: 'must be an absolute path',
    },
    {
      name: 'task with neither commands nor image',
      text: 'type: task\nname: nothing\n',
      line: 1,
      column: 1,
      path: ['commands'],
      message: "either 'commands' or 'image' is required",
    },
    {
      name: 'service range without scaling',
      text: 'type: service\nport: 8000\nimage: nginx\nreplicas: 0..4\n',
      line: 4,
      column: 11,
      path: ['replicas'],
      message: "'replicas' is a range, so 'scaling' is required",
    },
    {
      name: 'bad port mapping',
      text: 'type: task\ncommands: [train]\nports:\n  - "80:x"\n',
      line: 4,
      column: 5,
      path: ['ports', 0],
      message:
        "invalid port mapping '80:x': expected a port (8080), a mapping 'local:container' (80:8080) or '*:8080'",
    },
    {
      name: 'negative max_price',
      text: 'type: task\ncommands: [train]\nmax_price: -1\n',
      line: 3,
      column: 12,
      path: ['max_price'],
      message: 'max_price must be greater than 0',
    },
    {
      name: 'fleet nodes reversed',
      text: 'type: fleet\nnodes: 4..2\n',
      line: 2,
      column: 8,
      path: ['nodes'],
      message: "invalid nodes '4..2': max must not be less than min",
    },
    {
      name: 'gateway certificate without arn',
      text: 'type: gateway\nbackend: aws\nregion: us-east-1\ncertificate:\n  type: acm\n',
      line: 5,
      column: 3,
      path: ['certificate', 'arn'],
      message: "required field 'arn' is missing",
    },
    {
      name: 'ssh host with a typo',
      text: 'type: fleet\nssh_config:\n  user: ubuntu\n  hosts:\n    - hostname: 10.0.0.1\n      identity_fle: ~/.ssh/key\n',
      line: 6,
      column: 7,
      path: ['ssh_config', 'hosts', 0, 'identity_fle'],
      message: "unknown field 'identity_fle' in ssh_config.hosts[0]; did you mean 'identity_file'?",
    },
    {
      name: 'a misspelled required field (service port)',
      text: 'type: service\nimage: nginx\nprot: 8000\n',
      line: 3,
      column: 1,
      path: ['prot'],
      message: "unknown field 'prot' in the service configuration; did you mean 'port'?",
    },
    {
      name: 'a misspelled task commands',
      text: 'type: task\nname: train-x\ncomands:\n  - train\n',
      line: 3,
      column: 1,
      path: ['comands'],
      message: "unknown field 'comands' in the task configuration; did you mean 'commands'?",
    },
    {
      name: 'an unknown field that leaves a required one missing',
      text: 'type: task\ncmds: [train]\n',
      line: 2,
      column: 1,
      path: ['cmds'],
      message:
        "unknown field 'cmds' in the task configuration (and either 'commands' or 'image' is required)",
    },
    {
      name: 'a misspelled nested required field',
      text: 'type: gateway\nbackend: aws\nregion: us-east-1\ncertificate:\n  type: acm\n  ann: arn:aws:acm:x\n',
      line: 6,
      column: 3,
      path: ['certificate', 'ann'],
      message: "unknown field 'ann' in certificate; did you mean 'arn'?",
    },
  ])('$name', ({ text, line, column, path, message }) => {
    const error = parseError(text);
    expect(error.name).toBe('ConfigurationError');
    expect(error.file).toBe('app.dstack.yml');
    expect(error.message).toBe(message);
    expect({ line: error.line, column: error.column, path: error.path }).toEqual({ line, column, path });
  });

  test('formatConfigurationError prints file:line:column: path: message', () => {
    const error = parseError('type: task\ncommands: [train]\nresources:\n  gpus: 2\n');
    expect(formatConfigurationError(error)).toBe(
      "app.dstack.yml:4:3: resources.gpus: unknown field 'gpus' in resources; did you mean 'gpu'?",
    );
    expect(formatConfigurationError(new ConfigurationError('broken', { path: ['volumes', 0, 'path'] }))).toBe(
      'volumes[0].path: broken',
    );
  });

  test('validateConfiguration reports paths without positions', () => {
    expect(() => validateConfiguration({ type: 'task', commands: ['x'], resources: { gpus: 1 } })).toThrow(
      "unknown field 'gpus' in resources",
    );
    try {
      validateConfiguration({ type: 'task', commands: ['x'], resources: { gpus: 1 } });
    } catch (error) {
      expect(ConfigurationError.isInstance(error) && [error.path, error.line]).toEqual([
        ['resources', 'gpus'],
        undefined,
      ]);
    }
  });
  test('validateConfigurationOfType positions errors in the body and names the types it takes', () => {
    const runTypes = ['task', 'service', 'dev-environment'] as const;
    const refusal = (value: unknown, types: Parameters<typeof validateConfigurationOfType>[1]) => {
      try {
        validateConfigurationOfType(value, types, ['spec', 'configuration']);
      } catch (error) {
        if (ConfigurationError.isInstance(error)) return { message: error.message, path: error.path };
      }
      return null;
    };
    expect(refusal({ type: 'fleet', nodes: 1 }, runTypes)).toEqual({
      message: 'expected a task, service or dev-environment configuration, got fleet',
      path: ['spec', 'configuration', 'type'],
    });
    expect(refusal({ type: 'task', commands: ['x'] }, 'volume')).toEqual({
      message: 'expected a volume configuration, got task',
      path: ['spec', 'configuration', 'type'],
    });
    expect(refusal({ type: 'task', commands: ['x'], nodes: 'two' }, runTypes)?.path).toEqual([
      'spec',
      'configuration',
      'nodes',
    ]);
    expect(refusal({ type: 'service', port: 80, commands: ['x'] }, runTypes)).toBeNull();
  });
});
