/**
 * The gateway's state on its disk: what the server last sent (certificate, services, tokens), so
 * a restarted gateway serves at once, with no server. Written whole to a temporary file and
 * renamed over the old one, so a crash never leaves half a state; root-only (it holds a key).
 */
import { mkdir, readFile, rename, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { type GatewayState, GatewayStateSchema } from '@dstack/core/agent-protocol';

export const EMPTY_GATEWAY_STATE: GatewayState = {
  certificate: null,
  acme: null,
  services: [],
  token_hashes: {},
};

export class GatewayStateStore {
  readonly #path: string;

  constructor(home: string) {
    this.#path = join(home, 'state.json');
  }

  /** The stored state; the empty state when there is none yet. A corrupt file is an error. */
  async load(): Promise<GatewayState> {
    let text: string;
    try {
      text = await readFile(this.#path, 'utf8');
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === 'ENOENT') return EMPTY_GATEWAY_STATE;
      throw error;
    }
    return GatewayStateSchema.parse(JSON.parse(text));
  }

  async save(state: GatewayState): Promise<void> {
    const directory = join(this.#path, '..');
    await mkdir(directory, { recursive: true, mode: 0o700 });
    const temporary = `${this.#path}.${process.pid}.tmp`;
    await writeFile(temporary, JSON.stringify(state), { mode: 0o600 });
    await rename(temporary, this.#path);
  }
}
