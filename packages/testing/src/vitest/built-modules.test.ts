import { mkdirSync, mkdtempSync, rmSync, utimesSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { preferBuiltModules } from './built-modules.js';

describe('preferBuiltModules', () => {
  let dir: string | undefined;
  afterEach(() => {
    if (dir) rmSync(dir, { recursive: true, force: true });
    vi.restoreAllMocks();
  });

  /** A package whose source, emitted module and build record were last written at these seconds. */
  function packageAt(times: { source: number; module: number; buildInfo: number }): string {
    dir = mkdtempSync(join(tmpdir(), 'built-modules-'));
    mkdirSync(join(dir, 'src'));
    mkdirSync(join(dir, 'dist'));
    const files = [
      [join(dir, 'src', 'a.ts'), times.source],
      [join(dir, 'dist', 'a.js'), times.module],
      [join(dir, 'dist', '.tsbuildinfo'), times.buildInfo],
    ] as const;
    for (const [path, seconds] of files) {
      writeFileSync(path, '');
      utimesSync(path, seconds, seconds);
    }
    return dir;
  }

  it('loads a package from its build when the build is newer than every source', () => {
    expect(preferBuiltModules(packageAt({ source: 1_000, module: 2_000, buildInfo: 2_000 }))).not.toBeNull();
  });

  it('loads it from source when a source is newer than the emitted modules, whatever the build record says', () => {
    vi.spyOn(console, 'warn').mockImplementation(() => {});
    // `tsc --noEmit` rewrote the build record after the edit, and emitted nothing.
    expect(preferBuiltModules(packageAt({ source: 2_000, module: 1_000, buildInfo: 3_000 }))).toBeNull();
  });
});
