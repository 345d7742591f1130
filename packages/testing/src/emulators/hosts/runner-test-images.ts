/**
 * The images jobs run in on emulated container clouds, built offline by the shim's
 * `test-image/build-test-image.sh` (a static busybox, and a musl flavour): images without node,
 * which the runner's portable runtime must start in. A test that runs them builds them first, so
 * it does not depend on another test file having built them before it.
 */
import { execFile } from 'node:child_process';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { promisify } from 'node:util';

const run = promisify(execFile);

export const RUNNER_BUSYBOX_TEST_IMAGE = 'dstack-test/runner-busybox:v2';
export const RUNNER_MUSL_TEST_IMAGE = 'dstack-test/runner-musl:v2';

/** Builds both images where they are missing (the script leaves an existing image alone). */
export async function ensureRunnerTestImages(): Promise<void> {
  const script = join(
    dirname(createRequire(import.meta.url).resolve('@dstack/shim/package.json')),
    'test-image/build-test-image.sh',
  );
  for (const flavor of ['busybox', 'musl']) {
    await run('bash', [script, '--flavor', flavor], { timeout: 300_000 });
  }
}
