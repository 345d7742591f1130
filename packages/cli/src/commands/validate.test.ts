import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
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

  it('runs through the program in-process', async () => {
    const buffers = bufferIo();
    expect(await run(['node', 'dstack', 'validate', '-f', join(dir, 'none.yml')], buffers.io)).toBe(1);
    expect(buffers.stderr()).toContain('no such file');
    const help = bufferIo();
    expect(await run(['node', 'dstack'], help.io)).toBe(0);
    expect(help.stdout()).toContain('Usage: dstack');
  });
});
