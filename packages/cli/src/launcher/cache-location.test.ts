import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { cachesCommandCode, codeCacheFile } from './cache-location.js';

const node = ['/usr/bin/node', '/opt/dstack/bin/dstack.js'];

describe('codeCacheFile', () => {
  it('keeps one cache per top-level command under the cache home, named by the bundle', () => {
    const env = { XDG_CACHE_HOME: '/cache', HOME: '/home/u' };
    expect(codeCacheFile([...node, 'ps', '-a'], 'abc', env)).toBe(
      join('/cache', 'dstack', 'cli-code-cache', 'abc', 'ps.bin'),
    );
    expect(codeCacheFile([...node, 'fleet', 'list'], 'abc', env)).toMatch(/[/\\]fleet\.bin$/);
  });

  it('shares one cache among the runs without a command, and ~/.cache without XDG_CACHE_HOME', () => {
    const env = { HOME: '/home/u' };
    const shared = join('/home/u', '.cache', 'dstack', 'cli-code-cache', 'abc', 'dstack.bin');
    expect(codeCacheFile(node, 'abc', env)).toBe(shared);
    expect(codeCacheFile([...node, '--version'], 'abc', env)).toBe(shared);
    expect(codeCacheFile([...node, '../../etc'], 'abc', env)).toBe(shared);
  });
});

describe('cachesCommandCode', () => {
  it('is false for a help request, whose code is not the command’s', () => {
    expect(cachesCommandCode([...node, 'ps'])).toBe(true);
    expect(cachesCommandCode([...node, 'ps', '--help'])).toBe(false);
    expect(cachesCommandCode([...node, 'apply', '-h'])).toBe(false);
  });
});
