import { execFile } from 'node:child_process';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

/**
 * Runs `testBackend` on deliberately broken backends in a child vitest
 * (`src/__fixtures__/conformance-suites.fixture.ts`) and checks what it
 * reported: each broken rule fails its test, stubs make todo tests, and
 * skipped checks carry their reason.
 */
const packageRoot = join(dirname(fileURLToPath(import.meta.url)), '..', '..');
const vitestBin = join(dirname(createRequire(import.meta.url).resolve('vitest/package.json')), 'vitest.mjs');

interface AssertionResult {
  fullName: string;
  status: string;
  failureMessages: string[];
}

let results: Map<string, AssertionResult>;
let outputDirectory: string;

beforeAll(async () => {
  outputDirectory = await mkdtemp(join(tmpdir(), 'dstack-conformance-report-'));
  const outputFile = join(outputDirectory, 'report.json');
  // The child is a separate vitest; it must not think it runs inside this one.
  const environment = Object.fromEntries(
    Object.entries(process.env).filter(([name]) => !name.startsWith('VITEST') && name !== 'TEST'),
  );
  await new Promise<void>((resolve) => {
    execFile(
      process.execPath,
      [
        vitestBin,
        'run',
        '--root',
        packageRoot,
        '--config',
        'src/__fixtures__/fixture.vitest.config.ts',
        '--reporter=json',
        `--outputFile=${outputFile}`,
      ],
      { cwd: packageRoot, env: environment, timeout: 120_000 },
      // The child exits non-zero: the broken backends fail on purpose.
      () => resolve(),
    );
  });
  const report = JSON.parse(await readFile(outputFile, 'utf8')) as {
    testResults: { assertionResults: AssertionResult[] }[];
  };
  results = new Map(
    report.testResults.flatMap((file) => file.assertionResults).map((result) => [result.fullName, result]),
  );
}, 150_000);

afterAll(async () => {
  await rm(outputDirectory, { recursive: true, force: true });
});

/** The result of the test in `suite` whose name starts with `prefix`. */
function resultOf(suite: string, prefix: string): AssertionResult {
  const found = [...results.values()].filter((result) => result.fullName.startsWith(`${suite} ${prefix}`));
  if (found.length !== 1) {
    throw new Error(
      `expected one test "${suite} ${prefix}…", found ${found.map((r) => r.fullName).join(' | ')}`,
    );
  }
  return found[0] as AssertionResult;
}

describe('testBackend on a backend that breaks the contract', () => {
  it.each([
    ['the plugin declares exactly the capabilities', 'it has unexpected create-instance'],
    ['validateConfig rejects invalid credentials', 'validateConfig accepted the config'],
    ['getOffers orders offers by price', 'is cheaper than'],
    ['getOffers honours the minimum CPU count', 'CPUs < min'],
    ['getOffers honours the minimum memory', 'GB of memory < min'],
    ['getOffers honours max_price', '> max_price'],
    ['getOffers honours spot', 'spot is false, required true'],
    ['getOffers honours the GPU count', 'GPUs < min'],
    [
      'runJob turns a provider capacity error into NoCapacityError',
      'runJob threw Error: InsufficientInstanceCapacity',
    ],
    [
      'createInstance returns at once and updateProvisioningData fills hostname',
      'hostname still unset after 5 calls',
    ],
    [
      'a second createInstance with the same instance_id returns the same instance',
      'the first returned instance broken-',
    ],
    ['terminateInstance succeeds when called twice', 'call 2 of 2 threw'],
    ['terminateInstance succeeds on an instance the provider already removed', 'call 1 of 1 threw'],
  ])('fails "%s"', (test, message) => {
    const result = resultOf('broken', test);
    expect(result.status).toBe('failed');
    expect(result.failureMessages.join('\n')).toContain(message);
  });

  it('passes the rules it keeps', () => {
    for (const test of [
      'the package exports a valid v1 backend plugin descriptor',
      "the Compute has the plugin's type",
      'getOffers returns well-formed offers',
    ]) {
      expect(resultOf('broken', test).status, test).toBe('passed');
    }
  });
});

describe('testBackend on notImplemented() stubs', () => {
  it('reports the tests of stubbed Compute methods as todo, naming the methods', () => {
    const offers = resultOf('stub', 'getOffers orders offers by price');
    expect(offers.status).toBe('todo');
    expect(offers.fullName).toContain('(todo: getOffers() not implemented)');
    expect(resultOf('stub', 'runJob returns at once').fullName).toContain(
      'getOffers(), runJob(), updateProvisioningData() not implemented',
    );
    expect(resultOf('stub', 'validateConfig rejects invalid credentials').status).toBe('todo');
    const idempotent = resultOf('stub', 'a second runJob with the same instance_id');
    expect(idempotent.status).toBe('todo');
    expect(idempotent.fullName).toContain('getOffers(), runJob(), terminateInstance() not implemented');
  });

  it('still runs the descriptor and configurator tests', () => {
    expect(resultOf('stub', 'the package exports a valid v1').status).toBe('passed');
    expect(resultOf('stub', 'the configurator validates').status).toBe('passed');
  });

  it('reports every Compute test as todo when getCompute is a stub', () => {
    const computeTests = [...results.values()].filter(
      (result) =>
        result.fullName.startsWith('stub configurator ') &&
        !result.fullName.includes('plugin') &&
        !result.fullName.includes('(skipped:'),
    );
    expect(computeTests.length).toBeGreaterThan(5);
    for (const result of computeTests) expect(result.status, result.fullName).toBe('todo');
  });

  it('never passes or fails a todo test', () => {
    const todo = [...results.values()].filter((result) => result.fullName.includes('(todo:'));
    expect(todo.length).toBeGreaterThan(0);
    for (const result of todo) expect(result.status, result.fullName).toBe('todo');
  });
});

describe('testBackend skips', () => {
  it('reports a skip requested through `skip` with its reason', () => {
    const result = resultOf('stub configurator', 'getOffers orders offers by price');
    expect(result.status).toBe('skipped');
    expect(result.fullName).toContain('(skipped: checks that a skip reason is reported)');
  });

  it('skips the capacity test without an emulator, saying so', () => {
    const result = resultOf('stub', 'runJob turns a provider capacity error');
    expect(result.status).toBe('skipped');
    expect(result.fullName).toContain('no emulator to inject a capacity fault');
  });
});

describe('testBackend on something that is not a plugin', () => {
  it('fails the descriptor test and every test that needs the plugin', () => {
    const suite = [...results.values()].filter((result) => result.fullName.startsWith('not a plugin '));
    expect(suite.length).toBeGreaterThan(5);
    for (const result of suite) {
      if (result.fullName.includes('(skipped:')) continue;
      expect(result.status, result.fullName).toBe('failed');
      expect(result.failureMessages.join('\n')).toContain('is not a dstack backend plugin');
    }
  });
});
