import { open } from 'node:fs/promises';

/** What the portable runtime needs to know about an executable: its architecture and its loader. */
export interface ElfProgram {
  /** The CPU it runs on, as `uname -m` names it. */
  machine: 'x86_64' | 'aarch64';
  /** The dynamic loader it names (`PT_INTERP`, e.g. `/lib64/ld-linux-x86-64.so.2`); null when it is static. */
  interpreter: string | null;
}

const ELF_MAGIC = Buffer.from([0x7f, 0x45, 0x4c, 0x46]);
const ELF_CLASS_64 = 2;
const ELF_DATA_LITTLE_ENDIAN = 1;
const PROGRAM_HEADER_INTERPRETER = 3;
/** `e_machine` values of the architectures dstack's agents run on. */
const MACHINES: Record<number, ElfProgram['machine']> = { 62: 'x86_64', 183: 'aarch64' };
/** The ELF header and every program header sit in the first pages of an executable. */
const HEAD_BYTES = 64 * 1024;
/** A loader path longer than this is not a path. */
const MAX_INTERPRETER_BYTES = 4096;

/**
 * Reads the architecture and the dynamic loader of a 64-bit little-endian ELF executable (the
 * machines the agents run on). Only the headers are read, not the whole binary.
 */
export async function readElfProgram(path: string): Promise<ElfProgram> {
  const file = await open(path, 'r');
  try {
    const head = Buffer.alloc(HEAD_BYTES);
    const { bytesRead } = await file.read(head, 0, HEAD_BYTES, 0);
    const header = head.subarray(0, bytesRead);
    if (header.length < 64 || !header.subarray(0, 4).equals(ELF_MAGIC)) {
      throw new Error(`${path} is not an ELF executable`);
    }
    if (header[4] !== ELF_CLASS_64 || header[5] !== ELF_DATA_LITTLE_ENDIAN) {
      throw new Error(`${path} is not a 64-bit little-endian ELF executable`);
    }
    const machineCode = header.readUInt16LE(0x12);
    const machine = MACHINES[machineCode];
    if (machine === undefined) {
      throw new Error(`${path} is built for ELF machine ${machineCode}, not x86_64 or aarch64`);
    }
    const programHeadersOffset = Number(header.readBigUInt64LE(0x20));
    const programHeaderSize = header.readUInt16LE(0x36);
    const programHeaderCount = header.readUInt16LE(0x38);
    for (let index = 0; index < programHeaderCount; index++) {
      const entry = programHeadersOffset + index * programHeaderSize;
      if (entry + 0x28 > header.length) {
        throw new Error(`${path}: its program headers lie beyond the first ${HEAD_BYTES} bytes`);
      }
      if (header.readUInt32LE(entry) !== PROGRAM_HEADER_INTERPRETER) continue;
      const offset = Number(header.readBigUInt64LE(entry + 0x08));
      const size = Number(header.readBigUInt64LE(entry + 0x20));
      if (size === 0 || size > MAX_INTERPRETER_BYTES) {
        throw new Error(`${path} names a dynamic loader of ${size} bytes`);
      }
      const interpreter = Buffer.alloc(size);
      await file.read(interpreter, 0, size, offset);
      // The path is NUL-terminated inside the segment.
      const end = interpreter.indexOf(0);
      return { machine, interpreter: interpreter.subarray(0, end === -1 ? size : end).toString('utf8') };
    }
    return { machine, interpreter: null };
  } finally {
    await file.close();
  }
}
