import { existsSync } from 'node:fs';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { basename, join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { readElfProgram } from './elf-program.js';

/** A minimal 64-bit little-endian ELF header with no program header. */
function elfHeader(options: { machine: number; elfClass?: number }): Buffer {
  const header = Buffer.alloc(64);
  header.set([0x7f, 0x45, 0x4c, 0x46, options.elfClass ?? 2, 1, 1], 0);
  header.writeUInt16LE(2, 0x10); // ET_EXEC
  header.writeUInt16LE(options.machine, 0x12);
  header.writeBigUInt64LE(64n, 0x20); // program headers right after the header
  header.writeUInt16LE(56, 0x36);
  header.writeUInt16LE(0, 0x38);
  return header;
}

describe('readElfProgram', () => {
  let directory: string;

  beforeAll(async () => {
    directory = await mkdtemp(join(tmpdir(), 'dstack-elf-'));
  });

  afterAll(async () => {
    await rm(directory, { recursive: true, force: true });
  });

  it("reads the running node's architecture and its dynamic loader", async () => {
    const program = await readElfProgram(process.execPath);
    expect(program.machine).toBe(process.arch === 'arm64' ? 'aarch64' : 'x86_64');
    // Node is linked dynamically on the hosts the tests run on; its loader is a file there.
    expect(program.interpreter).not.toBeNull();
    expect(basename(program.interpreter ?? '')).toMatch(/^ld-(linux|musl)/);
    expect(existsSync(program.interpreter ?? '')).toBe(true);
  });

  it('reads an aarch64 program without a loader as static', async () => {
    const path = join(directory, 'static-aarch64');
    await writeFile(path, elfHeader({ machine: 183 }));
    expect(await readElfProgram(path)).toEqual({ machine: 'aarch64', interpreter: null });
  });

  it('refuses what it cannot carry, naming the file', async () => {
    const script = join(directory, 'script.sh');
    await writeFile(
      script,
      '#!/bin/sh\necho not an ELF file, but long enough to have a header of 64 bytes\n',
    );
    await expect(readElfProgram(script)).rejects.toThrow(`${script} is not an ELF executable`);

    const thirtyTwoBit = join(directory, 'i386');
    await writeFile(thirtyTwoBit, elfHeader({ machine: 3, elfClass: 1 }));
    await expect(readElfProgram(thirtyTwoBit)).rejects.toThrow(
      'is not a 64-bit little-endian ELF executable',
    );

    const riscv = join(directory, 'riscv');
    await writeFile(riscv, elfHeader({ machine: 243 }));
    await expect(readElfProgram(riscv)).rejects.toThrow(
      'is built for ELF machine 243, not x86_64 or aarch64',
    );
  });
});
