/**
 * A temporary project directory where provider modules can import `@dstack/core` and `zod`,
 * as in a user's project that installed them: `node_modules` links to the workspace's copies.
 */
import { cpSync, mkdirSync, mkdtempSync, realpathSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

/** The repository's `examples/` directory. */
export const EXAMPLES_DIR = fileURLToPath(new URL('../../../../examples/', import.meta.url));

function packageDirectory(name: string, from: string): string {
  return realpathSync(dirname(createRequire(from).resolve(`${name}/package.json`)));
}

export class ProviderProject {
  readonly dir: string;

  constructor() {
    this.dir = mkdtempSync(join(tmpdir(), 'dstack-provider-project-'));
    const core = packageDirectory('@dstack/core', import.meta.url);
    const zod = packageDirectory('zod', join(core, 'package.json'));
    mkdirSync(join(this.dir, 'node_modules/@dstack'), { recursive: true });
    symlinkSync(core, join(this.dir, 'node_modules/@dstack/core'), 'dir');
    symlinkSync(zod, join(this.dir, 'node_modules/zod'), 'dir');
  }

  /** Writes a file under the project (parents created); returns its absolute path. */
  write(path: string, content: string): string {
    const file = join(this.dir, path);
    mkdirSync(dirname(file), { recursive: true });
    writeFileSync(file, content);
    return file;
  }

  /** Copies a file of `examples/` into the project at the same relative path. */
  copyExample(path: string): string {
    const file = join(this.dir, path);
    mkdirSync(dirname(file), { recursive: true });
    cpSync(join(EXAMPLES_DIR, path), file);
    return file;
  }

  remove(): void {
    rmSync(this.dir, { recursive: true, force: true });
  }
}
