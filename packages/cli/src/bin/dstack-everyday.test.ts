// biome-ignore-all lint/suspicious/noTemplateCurlyInString: these tests are about dstack's ${{ }} references, written as users write them.
/**
 * What dstack users type every day (issue 30), through the built CLI against a real
 * `dstack server` with the local backend: configuration from the environment (CI), and
 * `dstack apply` with env, overrides, run arguments and profiles.
 */
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { CLI_TEST_TIMEOUT_MS, CliHarness } from '../__fixtures__/cli-harness.js';
import { type RealServer, startRealServer } from '../__fixtures__/real-server.js';

let server: RealServer;
let harness: CliHarness;
/** A project directory: the task file and `.dstack/profiles.yml`; the CLI runs in it. */
let project: string;

beforeAll(async () => {
  server = await startRealServer();
}, 60_000);

afterAll(async () => {
  await server?.stop();
});

beforeEach(() => {
  harness = new CliHarness();
  project = mkdtempSync(join(tmpdir(), 'dstack-cli-project-'));
});

afterEach(() => {
  harness.cleanUp();
  rmSync(project, { recursive: true, force: true });
});

/** The project's task: prints the variables and run arguments it was given. */
const TASK = [
  'type: task',
  'env:',
  '  - HF_TOKEN',
  '  - B=fixed',
  'commands:',
  '  - echo "A=$A HF=$HF_TOKEN B=$B args=${{ run.args }}"',
  '',
].join('\n');

function writeProjectFile(path: string, text: string): void {
  mkdirSync(join(project, path, '..'), { recursive: true });
  writeFileSync(join(project, path), text);
}

/** `dstack ARGS` in the project directory, configured for the real server. */
async function dstackInProject(args: string[], environment: NodeJS.ProcessEnv = {}) {
  await harness.useProject(server.url, server.token);
  return harness.run(args, environment, { cwd: project });
}

interface ListedRun {
  run_spec: { run_name: string; configuration: Record<string, unknown> };
}

async function submittedConfiguration(runName: string): Promise<Record<string, unknown>> {
  const listed = await harness.run(['ps', '-a', '--format', 'json']);
  expect(listed.code).toBe(0);
  const run = (JSON.parse(listed.stdout) as ListedRun[]).find((entry) => entry.run_spec.run_name === runName);
  expect(run, runName).toBeDefined();
  return run!.run_spec.configuration;
}

describe('DSTACK_SERVER_URL and DSTACK_TOKEN', { timeout: CLI_TEST_TIMEOUT_MS }, () => {
  it('configure dstack ps without ~/.dstack/config.yml', async () => {
    const result = await harness.run(['ps'], {
      DSTACK_SERVER_URL: server.url,
      DSTACK_TOKEN: server.token,
      DSTACK_PROJECT: 'main',
    });
    expect(result).toMatchObject({ code: 0, stderr: '' });
    expect(result.stdout).toMatch(/^NAME\s+BACKEND\s+GPU\s+PRICE\s+STATUS\s+SUBMITTED\n/);
  });

  it('need a project, as in dstack', async () => {
    const result = await harness.run(['ps'], { DSTACK_SERVER_URL: server.url, DSTACK_TOKEN: server.token });
    expect(result.code).toBe(1);
    expect(result.stderr).toBe(
      'error: DSTACK_SERVER_URL and DSTACK_TOKEN are set, but the project is not specified. Set DSTACK_PROJECT or use --project\n',
    );
    const named = await harness.run(['ps', '--project', 'main'], {
      DSTACK_SERVER_URL: server.url,
      DSTACK_TOKEN: server.token,
    });
    expect(named).toMatchObject({ code: 0, stderr: '' });
  });

  it('refuse DSTACK_SERVER_URL without DSTACK_TOKEN when no project is configured', async () => {
    const result = await harness.run(['ps'], { DSTACK_SERVER_URL: server.url, DSTACK_PROJECT: 'main' });
    expect(result.code).toBe(1);
    expect(result.stderr).toBe('error: DSTACK_SERVER_URL is set, but DSTACK_TOKEN is not set\n');
  });

  it('DSTACK_TOKEN alone overrides the configured token', async () => {
    await harness.useProject(server.url, 'not-the-token');
    const refused = await harness.run(['ps']);
    expect(refused.code).toBe(1);
    expect(refused.stderr).toContain('invalid token for project main');
    const result = await harness.run(['ps'], { DSTACK_TOKEN: server.token });
    expect(result).toMatchObject({ code: 0, stderr: '' });
  });
});

describe('dstack apply: env, overrides and run arguments', { timeout: CLI_TEST_TIMEOUT_MS * 2 }, () => {
  it('runs with -e, a bare env name from the shell, --cpu 1, -b local and ${{ run.args }}', async () => {
    writeProjectFile('task.yml', TASK);
    const result = await dstackInProject(
      [
        'apply',
        '-f',
        'task.yml',
        '-e',
        'A=1',
        '--cpu',
        '1',
        '-b',
        'local',
        '-n',
        'everyday-args',
        '-y',
        '--',
        'x',
        'y z',
      ],
      { HF_TOKEN: 'hf-from-shell' },
    );
    expect(result.stderr).toBe('');
    expect(result.code).toBe(0);
    expect(result.stdout).toMatch(/^Resources\s+cpu=1 mem=8GB\.\. disk=100GB\.\.$/m);
    expect(result.stdout).toContain("A=1 HF=hf-from-shell B=fixed args=x 'y z'\n");
    const configuration = await submittedConfiguration('everyday-args');
    // The server shows the local backend as dstack's `remote` type.
    expect(new Set(configuration.backends as string[])).toEqual(new Set(['remote']));
    expect(configuration).toMatchObject({
      resources: { cpu: { count: { min: 1, max: 1 } } },
      env: { HF_TOKEN: 'hf-from-shell', B: 'fixed', A: '1' },
    });
  });

  it('refuses a bare env name unset in the shell, naming it, and submits nothing', async () => {
    writeProjectFile('task.yml', TASK);
    const result = await dstackInProject(['apply', '-f', 'task.yml', '-n', 'everyday-unset', '-y']);
    expect(result).toMatchObject({ code: 1, stdout: '' });
    expect(result.stderr).toBe('error: Environment variable HF_TOKEN is not set\n');
    const listed = await harness.run(['ps', '-a', '--format', 'json']);
    expect(listed.stdout).not.toContain('everyday-unset');
  });

  it('sets profile parameters from flags, and names a bad flag', async () => {
    writeProjectFile('task.yml', TASK);
    const result = await dstackInProject(
      [
        'apply',
        '-f',
        'task.yml',
        '-d',
        '-y',
        '-n',
        'everyday-flags',
        '--max-price',
        '0.5',
        '--spot-auto',
        '--idle-duration',
        '10m',
        '--retry',
        '--fleet',
        'local',
        '-r',
        'local',
        '--max-duration',
        '2h',
      ],
      { HF_TOKEN: 'x' },
    );
    expect(result.stderr).toBe('');
    expect(result.stdout).toMatch(/^Spot policy\s+auto$/m);
    expect(result.stdout).toMatch(/^Max price\s+\$0\.5$/m);
    const configuration = await submittedConfiguration('everyday-flags');
    expect(configuration).toMatchObject({
      max_price: 0.5,
      spot_policy: 'auto',
      idle_duration: 600,
      max_duration: 7200,
      fleets: ['local'],
      regions: ['local'],
      retry: { duration: 3600 },
    });
    await harness.run(['stop', '-x', '-y', 'everyday-flags']);

    const bad = await dstackInProject(['apply', '-f', 'task.yml', '-y', '--gpu', 'A100:lots'], {
      HF_TOKEN: 'x',
    });
    expect(bad.code).toBe(1);
    expect(bad.stderr).toMatch(/^error: --gpu: .+\n$/);
  });

  it('refuses run flags with a fleet configuration instead of ignoring them', async () => {
    writeProjectFile('fleet.yml', 'type: fleet\nname: ff\nnodes: 1\n');
    const result = await dstackInProject(['apply', '-f', 'fleet.yml', '-y', '--cpu', '4']);
    expect(result.code).toBe(1);
    expect(result.stderr).toBe(
      'error: --cpu applies to runs (task, service, dev-environment), not to a fleet\n',
    );
  });

  it("lists dstack's flags in dstack apply --help", async () => {
    const result = await harness.run(['apply', '--help']);
    expect(result.code).toBe(0);
    for (const flag of [
      '-e, --env',
      '--gpu',
      '--cpu',
      '--memory',
      '--disk',
      '-b, --backend',
      '-r, --region',
      '--instance-type',
      '--spot',
      '--on-demand',
      '--spot-auto',
      '--max-price',
      '--fleet',
      '-R, --reuse',
      '--idle-duration',
      '--retry',
      '--no-retry',
      '--max-offers',
      '-n, --name',
      '--profile',
      'run_args',
    ]) {
      expect(result.stdout, flag).toContain(flag);
    }
  });
});

describe('dstack apply: profiles', { timeout: CLI_TEST_TIMEOUT_MS * 2 }, () => {
  const PROFILES = [
    'profiles:',
    '  - name: p',
    '    max_price: 2.5',
    '    spot_policy: auto',
    '  - name: everyday',
    '    default: true',
    '    max_duration: 1h',
    '',
  ].join('\n');

  it('applies --profile p, and the default profile without --profile; the file wins over both', async () => {
    writeProjectFile('task.yml', `${TASK}max_duration: 3h\n`);
    writeProjectFile('.dstack/profiles.yml', PROFILES);
    const named = await dstackInProject(
      ['apply', '-f', 'task.yml', '-d', '-y', '-n', 'everyday-profile', '--profile', 'p'],
      { HF_TOKEN: 'x' },
    );
    expect(named.stderr).toBe('');
    expect(await submittedConfiguration('everyday-profile')).toMatchObject({
      max_price: 2.5,
      spot_policy: 'auto',
      max_duration: 10_800,
    });
    await harness.run(['stop', '-x', '-y', 'everyday-profile']);

    writeProjectFile('task.yml', TASK);
    const byDefault = await dstackInProject(
      ['apply', '-f', 'task.yml', '-d', '-y', '-n', 'everyday-default'],
      {
        HF_TOKEN: 'x',
      },
    );
    expect(byDefault.stderr).toBe('');
    const configuration = await submittedConfiguration('everyday-default');
    expect(configuration).toMatchObject({ max_duration: 3600 });
    expect(configuration.max_price).toBeUndefined();
    await harness.run(['stop', '-x', '-y', 'everyday-default']);
  });

  it('falls back to ~/.dstack/profiles.yml, and refuses a profile found nowhere', async () => {
    writeProjectFile('task.yml', TASK);
    mkdirSync(join(harness.home, '.dstack'), { recursive: true });
    writeFileSync(join(harness.home, '.dstack', 'profiles.yml'), PROFILES);
    const result = await dstackInProject(
      ['apply', '-f', 'task.yml', '-d', '-y', '-n', 'everyday-home', '--profile', 'p', '--max-price', '1'],
      { HF_TOKEN: 'x' },
    );
    expect(result.stderr).toBe('');
    // A flag wins over the profile, as in dstack.
    expect(await submittedConfiguration('everyday-home')).toMatchObject({
      max_price: 1,
      spot_policy: 'auto',
    });
    await harness.run(['stop', '-x', '-y', 'everyday-home']);

    const missing = await dstackInProject(['apply', '-f', 'task.yml', '-y', '--profile', 'nope'], {
      HF_TOKEN: 'x',
    });
    expect(missing).toMatchObject({ code: 1, stderr: 'error: No such profile: nope\n' });
  });
});

describe('dstack completion: names from the server', { timeout: CLI_TEST_TIMEOUT_MS }, () => {
  /** What the bin answers the completion script for `line` (argcomplete's protocol, via a file). */
  async function complete(line: string): Promise<string[]> {
    const output = join(project, 'completions');
    const result = await harness.run([], {
      _ARGCOMPLETE: '1',
      _ARGCOMPLETE_SUPPRESS_SPACE: '1',
      COMP_LINE: line,
      COMP_POINT: String(line.length),
      _ARGCOMPLETE_STDOUT_FILENAME: output,
    });
    expect(result.code).toBe(0);
    return readFileSync(output, 'utf8').split('\u000b').filter(Boolean);
  }

  it('completes run names for dstack logs and fleet names for dstack fleet delete', async () => {
    writeProjectFile('task.yml', TASK);
    const submitted = await dstackInProject(['apply', '-f', 'task.yml', '-d', '-y', '-n', 'complete-me'], {
      HF_TOKEN: 'x',
    });
    expect(submitted.stderr).toBe('');
    expect(await complete('dstack logs complete-')).toEqual(['complete-me']);
    expect(await complete('dstack fleet delete lo')).toEqual(['local']);
    expect(await complete('dstack ps --project ')).toEqual(['main']);
    await harness.run(['stop', '-x', '-y', 'complete-me']);
  });
});
