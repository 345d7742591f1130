// biome-ignore-all lint/suspicious/noTemplateCurlyInString: bash's own ${…} in a script.
/**
 * `dstack completion bash|zsh` through the built bin, and the script it prints run by a real
 * bash, which calls the bin back (argcomplete's protocol) for the candidates.
 */
import { execFile } from 'node:child_process';
import { chmodSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BIN, CLI_TEST_TIMEOUT_MS } from '../__fixtures__/cli-harness.js';

const run = promisify(execFile);
let binDir: string;

beforeAll(() => {
  // `dstack` on PATH, as the script calls it by name.
  binDir = mkdtempSync(join(tmpdir(), 'dstack-completion-'));
  writeFileSync(join(binDir, 'dstack'), `#!/bin/sh\nexec "${process.execPath}" "${BIN}" "$@"\n`);
  chmodSync(join(binDir, 'dstack'), 0o755);
});

afterAll(() => {
  rmSync(binDir, { recursive: true, force: true });
});

/** COMPREPLY for `line` (cursor at its end), from the script `dstack completion bash` prints. */
async function complete(line: string): Promise<string[]> {
  const script = [
    'source <(dstack completion bash)',
    'COMP_LINE="$LINE"; COMP_POINT=${#COMP_LINE}',
    '_dstack_complete dstack',
    'printf "%s\\n" "${COMPREPLY[@]}"',
  ].join('\n');
  const { stdout } = await run('bash', ['-c', script], {
    env: { PATH: `${binDir}:${process.env.PATH}`, HOME: binDir, LINE: line },
  });
  return stdout.split('\n').filter((entry) => entry !== '');
}

describe('dstack completion', { timeout: CLI_TEST_TIMEOUT_MS }, () => {
  it('prints one script for bash and zsh, registering the completion of dstack', async () => {
    for (const shell of ['bash', 'zsh']) {
      const { stdout } = await run(process.execPath, [BIN, 'completion', shell]);
      expect(stdout.startsWith('#compdef dstack\n')).toBe(true);
      expect(stdout).toContain(
        '    complete -o nospace -o default -o bashdefault -F _dstack_complete dstack\n',
      );
      expect(stdout).toContain('    compdef _dstack_complete dstack\n');
    }
    await expect(run(process.execPath, [BIN, 'completion', 'fish'])).rejects.toMatchObject({
      stderr: expect.stringContaining(
        "value 'fish' is invalid for argument 'shell'. Allowed choices are bash, zsh",
      ),
    });
  });

  it('completes commands, options and choices in a real bash', async () => {
    expect(await complete('dstack ap')).toEqual(['apply ']);
    expect(await complete('dstack apply --spot')).toEqual(['--spot', '--spot-auto', '--spot-policy']);
    expect(await complete('dstack ps --format ')).toEqual(['table', 'json']);
    expect(await complete('dstack completion ')).toEqual(['bash', 'zsh']);
    expect(await complete('dstack completion z')).toEqual(['zsh ']);
  });
});
