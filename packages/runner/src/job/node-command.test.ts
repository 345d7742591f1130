import { describe, expect, it } from 'vitest';
import { currentNodeCommand } from './node-command.js';

describe('currentNodeCommand', () => {
  it('is node itself when node was started directly', () => {
    expect(currentNodeCommand({ execPath: '/usr/bin/node', argv0: 'node' })).toEqual({
      command: '/usr/bin/node',
      args: [],
    });
  });

  it("goes through the portable runtime's glibc loader, with the libraries beside it", () => {
    expect(
      currentNodeCommand({
        execPath: '/dstack/runtime/lib/ld-linux-x86-64.so.2',
        argv0: '/dstack/runtime/bin/node',
      }),
    ).toEqual({
      command: '/dstack/runtime/lib/ld-linux-x86-64.so.2',
      args: ['--library-path', '/dstack/runtime/lib', '--inhibit-cache', '/dstack/runtime/bin/node'],
    });
  });

  it("goes through a musl loader without glibc's options", () => {
    expect(
      currentNodeCommand({ execPath: '/opt/rt/lib/ld-musl-aarch64.so.1', argv0: '/opt/rt/bin/node' }),
    ).toEqual({
      command: '/opt/rt/lib/ld-musl-aarch64.so.1',
      args: ['--library-path', '/opt/rt/lib', '/opt/rt/bin/node'],
    });
  });

  it('keeps execPath when the program name does not say where node is', () => {
    expect(currentNodeCommand({ execPath: '/rt/lib/ld-linux-aarch64.so.1', argv0: 'node' })).toEqual({
      command: '/rt/lib/ld-linux-aarch64.so.1',
      args: [],
    });
  });
});
