import { mkdtemp, readFile, rm, stat } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DescribeRegionsCommand, EC2Client } from '@aws-sdk/client-ec2';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import type { AwsEmulator } from './aws-emulator.js';
import { RecordingHosts } from './aws-emulator.test.helpers.js';
import { parseAwsEmulatorArguments, runAwsEmulatorCommand } from './aws-emulator-command.js';

let directory: string;
beforeEach(async () => {
  directory = await mkdtemp(join(tmpdir(), 'aws-emulator-command-'));
});
afterEach(async () => {
  await rm(directory, { recursive: true, force: true });
});

interface ServerConfig {
  projects: {
    name: string;
    backends: {
      type: string;
      creds: { type: string; access_key: string; secret_key: string };
      regions: string[];
      endpoint_url: string;
    }[];
  }[];
}

describe('emulator aws', () => {
  it('writes a server config.yml pointing project main at the emulator, runs until stopped, closes its hosts', async () => {
    const file = join(directory, 'config.yml');
    const hosts = new RecordingHosts();
    const lines: string[] = [];
    const stop = new AbortController();
    let ready: (emulator: AwsEmulator) => void = () => {};
    const started = new Promise<AwsEmulator>((resolve) => {
      ready = resolve;
    });
    const running = runAwsEmulatorCommand(
      [
        '--server-config',
        file,
        '--fault',
        'InsufficientInstanceCapacity:g5.xlarge',
        '--fault',
        'SlowPublicIp',
      ],
      { hosts, signal: stop.signal, log: (line) => lines.push(line), onReady: (emulator) => ready(emulator) },
    );
    const emulator = await started;

    const config = parse(await readFile(file, 'utf8')) as ServerConfig;
    expect(config).toEqual({
      projects: [
        {
          name: 'main',
          backends: [
            {
              type: 'aws',
              creds: {
                type: 'access_key',
                access_key: emulator.credentials.accessKeyId,
                secret_key: emulator.credentials.secretAccessKey,
              },
              regions: ['us-east-1', 'us-west-2', 'eu-west-1'],
              endpoint_url: emulator.url,
            },
          ],
        },
      ],
    });
    expect((await stat(file)).mode & 0o777).toBe(0o600);
    expect(lines[0]).toBe(`AWS emulator listening on ${emulator.url}`);
    expect(emulator.url).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
    expect(emulator.faults().map((fault) => fault.code)).toEqual([
      'InsufficientInstanceCapacity',
      'SlowPublicIp',
    ]);

    // The config's creds and endpoint work with the real SDK.
    const backend = config.projects[0]?.backends[0];
    const ec2 = new EC2Client({
      endpoint: backend?.endpoint_url,
      region: backend?.regions[0],
      credentials: {
        accessKeyId: backend?.creds.access_key ?? '',
        secretAccessKey: backend?.creds.secret_key ?? '',
      },
    });
    await expect(ec2.send(new DescribeRegionsCommand({}))).resolves.toBeDefined();

    stop.abort();
    await running;
    expect(hosts.closed).toBe(true);
    expect(lines.at(-1)).toBe('Stopping (abort)');
    await expect(fetch(`${emulator.url}/_emulator/state`)).rejects.toThrow();
  });

  it('rejects bad arguments naming the flag', () => {
    expect(() => parseAwsEmulatorArguments([])).toThrow(/--server-config FILE is required/);
    expect(() => parseAwsEmulatorArguments(['--server-config', 'x', '--port', 'abc'])).toThrow(/--port/);
    expect(() => parseAwsEmulatorArguments(['--server-config', 'x', '--fault', 'Nope'])).toThrow(
      /unknown code Nope/,
    );
    expect(() => parseAwsEmulatorArguments(['--server-config', 'x', '--bogus'])).toThrow(/bogus/);
    expect(parseAwsEmulatorArguments(['--server-config', 'c.yml', '--port', '8123'])).toEqual({
      serverConfig: 'c.yml',
      port: 8123,
      faults: [],
    });
  });
});
