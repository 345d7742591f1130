import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { ProviderProject } from '../__fixtures__/provider-project.js';
import type { CliIo } from '../io.js';
import { run } from '../program.js';
import { validateCommand } from './validate.js';

function bufferIo(stderrColors = false) {
  const out: string[] = [];
  const err: string[] = [];
  const io: CliIo = { stdout: (t) => out.push(t), stderr: (t) => err.push(t), stderrColors };
  return { io, stdout: () => out.join(''), stderr: () => err.join('') };
}

const dir = mkdtempSync(join(tmpdir(), 'dstack-validate-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe('validateCommand', () => {
  it('prints the effective configuration', async () => {
    const file = join(dir, 'ok.dstack.yml');
    writeFileSync(file, 'type: task\ncommands: [nvidia-smi]\nresources:\n  gpu: A100:80GB:2\n');
    const buffers = bufferIo();
    expect(await validateCommand({ file, format: 'json' }, buffers.io)).toBe(0);
    const printed = JSON.parse(buffers.stdout());
    expect(printed.resources.gpu).toMatchObject({ name: ['A100'], count: { min: 2, max: 2 } });
  });

  it('colors errors only when asked', async () => {
    const file = join(dir, 'bad.dstack.yml');
    writeFileSync(file, 'type: taks\n');
    const plain = bufferIo(false);
    expect(await validateCommand({ file, format: 'yaml' }, plain.io)).toBe(1);
    expect(plain.stderr()).toMatch(new RegExp(`^${file.replaceAll('.', '\\.')}:1:7: type: .*'task'`));
    expect(plain.stderr()).not.toContain('\u001b[');
    const colored = bufferIo(true);
    await validateCommand({ file, format: 'yaml' }, colored.io);
    expect(colored.stderr()).toContain('\u001b[31m');
  });

  it('reports an alias bomb, an oversized file and a misspelled field as one line each', async () => {
    const bomb = join(dir, 'bomb.dstack.yml');
    const levels = ['type: task', 'commands: [echo]', 'a: &a [lol, lol, lol, lol, lol, lol, lol, lol, lol]'];
    for (const name of ['b', 'c', 'd', 'e', 'f']) {
      const previous = String.fromCharCode(name.charCodeAt(0) - 1);
      levels.push(`${name}: &${name} [${Array(9).fill(`*${previous}`).join(', ')}]`);
    }
    writeFileSync(bomb, `${levels.join('\n')}\n`);
    const big = join(dir, 'big.dstack.yml');
    writeFileSync(big, `type: task\ncommands:\n${'  - echo hello\n'.repeat(100_000)}`);
    const typo = join(dir, 'typo.dstack.yml');
    writeFileSync(typo, 'type: service\nimage: nginx\nprot: 8000\n');
    const printed: string[] = [];
    for (const file of [bomb, big, typo]) {
      const buffers = bufferIo();
      expect(await validateCommand({ file, format: 'yaml' }, buffers.io)).toBe(1);
      printed.push(buffers.stderr());
    }
    expect(printed).toEqual([
      `${bomb}:8:8: invalid YAML: alias *e expands the document too much (aliases may repeat content at most 100 times)\n`,
      `${big}: the file is 1.4 MiB, over the 1 MiB limit for YAML files\n`,
      `${typo}:3:1: prot: unknown field 'prot' in the service configuration; did you mean 'port'?\n`,
    ]);
  });

  it('stops reading an endless file once it is over the limit', async () => {
    const buffers = bufferIo();
    expect(await validateCommand({ file: '/dev/zero', format: 'yaml' }, buffers.io)).toBe(1);
    expect(buffers.stderr()).toBe('/dev/zero: the file is over the 1 MiB limit for YAML files\n');
  });

  it("checks a provider's parameters with the provider's schema", async () => {
    const project = new ProviderProject();
    try {
      project.copyExample('providers/curl.mjs');
      const file = project.write(
        'curl.dstack.yml',
        'type: task\nprovider: ./providers/curl.mjs\nparameters:\n  url: https://example.com/\n  outptu: x\n',
      );
      const buffers = bufferIo();
      expect(await validateCommand({ file, format: 'yaml' }, buffers.io)).toBe(1);
      expect(buffers.stderr()).toBe(`${file}:4:3: parameters.output: required field 'output' is missing\n`);
      project.write('providers/empty.mjs', 'export default null;\n');
      const notProvider = project.write('empty.dstack.yml', 'type: task\nprovider: ./providers/empty.mjs\n');
      const other = bufferIo();
      expect(await validateCommand({ file: notProvider, format: 'yaml' }, other.io)).toBe(1);
      expect(other.stderr()).toContain('error: "./providers/empty.mjs" is not a dstack provider');
    } finally {
      project.remove();
    }
  });

  it('runs through the program in-process', async () => {
    const buffers = bufferIo();
    expect(await run(['node', 'dstack', 'validate', '-f', join(dir, 'none.yml')], buffers.io)).toBe(1);
    expect(buffers.stderr()).toContain('no such file');
    const help = bufferIo();
    expect(await run(['node', 'dstack'], help.io)).toBe(0);
    expect(help.stdout()).toContain('Usage: dstack');
  });
});
