import { describe, expect, it } from 'vitest';
import { parseLoaderListing } from './shared-libraries.js';

describe('parseLoaderListing', () => {
  it("reads glibc's listing, leaving out the vDSO and the loader", () => {
    const listing = [
      '\tlinux-vdso.so.1 (0x00007ffc8a5f2000)',
      '\tlibdl.so.2 => /lib/x86_64-linux-gnu/libdl.so.2 (0x00007f9aaa527000)',
      '\tlibstdc++.so.6 => /lib/x86_64-linux-gnu/libstdc++.so.6 (0x00007f9aaa200000)',
      '\tlibc.so.6 => /lib/x86_64-linux-gnu/libc.so.6 (0x00007f9aaa01e000)',
      '\t/lib64/ld-linux-x86-64.so.2 (0x00007f9aaa53f000)',
      '',
    ].join('\n');
    expect(parseLoaderListing(listing, '/usr/bin/node')).toEqual([
      { name: 'libdl.so.2', path: '/lib/x86_64-linux-gnu/libdl.so.2' },
      { name: 'libstdc++.so.6', path: '/lib/x86_64-linux-gnu/libstdc++.so.6' },
      { name: 'libc.so.6', path: '/lib/x86_64-linux-gnu/libc.so.6' },
    ]);
  });

  it("reads musl's listing, where libc is the loader", () => {
    const listing = [
      '\t/lib/ld-musl-aarch64.so.1 (0x7f8c2a1b0000)',
      '\tlibstdc++.so.6 => /usr/lib/libstdc++.so.6 (0x7f8c29e00000)',
      '\tlibc.musl-aarch64.so.1 => /lib/ld-musl-aarch64.so.1 (0x7f8c2a1b0000)',
    ].join('\n');
    expect(parseLoaderListing(listing, '/usr/bin/node')).toEqual([
      { name: 'libstdc++.so.6', path: '/usr/lib/libstdc++.so.6' },
      { name: 'libc.musl-aarch64.so.1', path: '/lib/ld-musl-aarch64.so.1' },
    ]);
  });

  it('names a library the host lacks, and one named by path', () => {
    expect(() => parseLoaderListing('\tlibicuuc.so.72 => not found\n', '/opt/node/bin/node')).toThrow(
      '/opt/node/bin/node needs libicuuc.so.72, which its loader does not find on this host',
    );
    expect(() =>
      parseLoaderListing(
        '\t/opt/lib/libx.so => /opt/lib/libx.so (0x00007f0000000000)\n',
        '/opt/node/bin/node',
      ),
    ).toThrow('/opt/node/bin/node names the library /opt/lib/libx.so by path');
  });
});
