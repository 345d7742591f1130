import { execFile } from 'node:child_process';
import { promisify } from 'node:util';

const run = promisify(execFile);

/**
 * Runs one of the test images' build scripts with bash; a failure names the image and says what
 * the script printed on stderr (debootstrap's or Docker's reason), not only its exit status.
 */
export async function runImageBuildScript(
  what: string,
  args: readonly string[],
  options: { env: NodeJS.ProcessEnv; timeoutMs: number },
): Promise<void> {
  try {
    await run('bash', [...args], { env: options.env, timeout: options.timeoutMs });
  } catch (error) {
    const stderr = (error as { stderr?: string }).stderr?.trim();
    throw new Error(`building ${what} failed: ${stderr || (error as Error).message}`, { cause: error });
  }
}
