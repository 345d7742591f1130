/** How long events are kept. */
import { type Environment, integerVariable } from '../environment-variables.js';

/** `DSTACK_SERVER_EVENTS_TTL_SECONDS` when unset (dstack's default): events are kept 30 days. */
export const DEFAULT_EVENTS_TTL_SECONDS = 30 * 24 * 3600;

export interface EventSettings {
  /**
   * How long events are kept, in seconds: `events.ttl_seconds` of config.yml, else
   * `DSTACK_SERVER_EVENTS_TTL_SECONDS` (dstack's setting); 0 records none. Default 30 days.
   */
  ttlSeconds: number;
}

export function readEventSettings(env: Environment): EventSettings {
  return {
    ttlSeconds: integerVariable(env, 'DSTACK_SERVER_EVENTS_TTL_SECONDS', DEFAULT_EVENTS_TTL_SECONDS, {
      min: 0,
      max: Number.MAX_SAFE_INTEGER,
    }),
  };
}
