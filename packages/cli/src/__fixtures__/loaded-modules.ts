/**
 * Which modules a `dstack` process loads: a module loader hook (`module.register`, passed with
 * `--import`) appends the URL of every module it loads to the file named by
 * `$DSTACK_TEST_LOADED_MODULES`. Node's loader hooks see ES modules (and the entry of a CommonJS
 * package imported from one).
 */
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';

const HOOKS = `import { appendFileSync } from 'node:fs';
export async function load(url, context, nextLoad) {
  appendFileSync(process.env.DSTACK_TEST_LOADED_MODULES, url + '\\n');
  return nextLoad(url, context);
}
`;

export class LoadedModulesHook {
  readonly directory = mkdtempSync(join(tmpdir(), 'dstack-loaded-modules-'));
  /** The node arguments that install the hook. */
  readonly nodeArguments: readonly string[];
  #logs = 0;

  constructor() {
    writeFileSync(join(this.directory, 'hooks.mjs'), HOOKS);
    const register = join(this.directory, 'register.mjs');
    writeFileSync(
      register,
      `import { register } from 'node:module';\nregister(${JSON.stringify(pathToFileURL(join(this.directory, 'hooks.mjs')).href)});\n`,
    );
    this.nodeArguments = ['--import', pathToFileURL(register).href];
  }

  /** A new empty log, and the environment that makes a hooked process write to it. */
  newLog(): { environment: NodeJS.ProcessEnv; read: () => string[] } {
    this.#logs += 1;
    const log = join(this.directory, `loaded-${this.#logs}.txt`);
    writeFileSync(log, '');
    return {
      environment: { DSTACK_TEST_LOADED_MODULES: log },
      read: () => readFileSync(log, 'utf8').trim().split('\n'),
    };
  }

  remove(): void {
    rmSync(this.directory, { recursive: true, force: true });
  }
}
