/** The built-in SSH proxy dstack's clients attach through, and how long ended jobs stay attachable. */
import {
  type Environment,
  integerVariable,
  secondsVariableAsMs,
  stringVariable,
} from '../../environment-variables.js';

/**
 * How long a job that ends at once is still shown running (dstack's server looks at a running job
 * at most every 10 s, so there a job is running at least that long, and dstack's CLI counts on it).
 */
export const DEFAULT_ATTACH_WINDOW_SECONDS = 10;

export interface SshProxySettings {
  /**
   * `DSTACK_SERVER_SSHPROXY_PORT`: the port of the built-in SSH proxy (dstack's `sshproxy`), where
   * dstack's own clients attach to jobs; on the server's host. 0 picks a free port at every start;
   * null (`off`) serves none. Default 0.
   */
  port: number | null;
  /**
   * `DSTACK_SERVER_SSHPROXY_ADDRESS` (dstack's setting): `host[:port]` clients are told to reach
   * the SSH proxy at, when it is not the address it listens on (NAT, a load balancer). Null: the
   * listening address (the server's host, or this machine's name when that is a wildcard).
   */
  address: string | null;
  /**
   * `DSTACK_SERVER_ATTACH_WINDOW_SECONDS`: how long after it started a job of a run dstack's client
   * submitted (see `runs/attach-window.ts`) whose runner already reported its end is still shown
   * running, while the server has an SSH proxy. dstack's CLI attaches only to a running job and
   * looks every 1–5 s; on dstack's server a job is running at least 10 s. 0: the end is shown at
   * once. Default 10 s.
   */
  attachWindowMs: number;
}

export function readSshProxySettings(env: Environment): SshProxySettings {
  const off = env.DSTACK_SERVER_SSHPROXY_PORT?.trim().toLowerCase() === 'off';
  return {
    port: off ? null : integerVariable(env, 'DSTACK_SERVER_SSHPROXY_PORT', 0, { min: 0, max: 65535 }),
    address: stringVariable(env, 'DSTACK_SERVER_SSHPROXY_ADDRESS'),
    attachWindowMs: secondsVariableAsMs(
      env,
      'DSTACK_SERVER_ATTACH_WINDOW_SECONDS',
      DEFAULT_ATTACH_WINDOW_SECONDS,
      { min: 0, max: 600 },
    ),
  };
}
