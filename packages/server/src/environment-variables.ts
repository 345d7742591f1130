/**
 * Readers of the server's environment variables, shared by every domain's settings: each returns
 * the value, or throws a ConfigurationError naming the variable and what it must be.
 */
import { ConfigurationError } from '@dstack/core';

export type Environment = NodeJS.ProcessEnv;

/** The trimmed value; null when unset or blank. */
export function stringVariable(env: Environment, name: string): string | null {
  const value = env[name]?.trim();
  return value ? value : null;
}

/** A whole number within `bounds`; `fallback` when unset. */
export function integerVariable(
  env: Environment,
  name: string,
  fallback: number,
  bounds: { min: number; max: number },
): number {
  const raw = env[name]?.trim();
  if (raw === undefined || raw === '') return fallback;
  const value = Number(raw);
  if (!/^\d+$/.test(raw) || value < bounds.min || value > bounds.max) {
    throw new ConfigurationError(
      `${name} must be a whole number from ${bounds.min} to ${bounds.max}, got "${raw}"`,
      { path: [name] },
    );
  }
  return value;
}

/** Seconds within `bounds`, as milliseconds; `fallbackSeconds` when unset. */
export function secondsVariableAsMs(
  env: Environment,
  name: string,
  fallbackSeconds: number,
  bounds: { min: number; max: number },
): number {
  return integerVariable(env, name, fallbackSeconds, bounds) * 1000;
}

/** An http(s) URL; null when unset. */
export function urlVariable(env: Environment, name: string): string | null {
  const value = stringVariable(env, name);
  if (value === null) return null;
  if (!/^https?:\/\//.test(value) || !URL.canParse(value)) {
    throw new ConfigurationError(`${name} must be an http(s) URL, got "${value}"`, { path: [name] });
  }
  return value;
}

/** Set to anything but blank, `0`, `false`, `no` or `off`. */
export function flagVariable(env: Environment, name: string): boolean {
  const value = env[name];
  return value !== undefined && !['', '0', 'false', 'no', 'off'].includes(value.trim().toLowerCase());
}
