/**
 * An agent's token as its command reads it at start (the shim's, the gateway agent's): from
 * `--token-file`, which only its owner may read (as ssh refuses such a private key), else from
 * the environment variable, which is then removed (the processes the agent starts inherit its
 * environment). Never from the command line, where `ps` shows it to every user.
 */
import { readFile, stat } from 'node:fs/promises';
import { normalizeAgentToken } from '@dstack/runner';

/** The token, or null when neither the file nor the variable gives one. Throws naming the file. */
export async function readAgentToken(
  tokenFile: string | undefined,
  environmentName: string,
): Promise<string | null> {
  const fromEnvironment = process.env[environmentName];
  delete process.env[environmentName];
  if (tokenFile === undefined) return normalizeAgentToken(fromEnvironment, environmentName);
  const mode = (await stat(tokenFile)).mode & 0o777;
  if ((mode & 0o077) !== 0) {
    throw new Error(
      `--token-file ${tokenFile} may be read by other users (mode ${mode.toString(8).padStart(4, '0')}): make it 0600`,
    );
  }
  const token = normalizeAgentToken(await readFile(tokenFile, 'utf8'), `--token-file ${tokenFile}`);
  if (token === null) throw new Error(`--token-file ${tokenFile} is empty`);
  return token;
}
