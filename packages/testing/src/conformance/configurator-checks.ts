import {
  type BackendPlugin,
  type Configurator,
  isNotImplemented,
  type StoredBackendRecord,
} from '@dstack/core';
import { ConformanceViolation, show } from './conformance-violation.js';

const ROUND_TRIP_RULE = 'the configurator round-trips the stored record';

/**
 * The record `createBackend` stored parses as `storedConfig`, and the
 * configurator's implemented getters read it back: with the creds that were
 * sent, and without any creds.
 */
export function checkConfiguratorRoundTrip(
  plugin: BackendPlugin,
  configurator: Configurator,
  record: StoredBackendRecord,
  sentConfig: unknown,
): void {
  const schemas = plugin.configSchemas;
  if (!schemas.storedConfig.safeParse(JSON.parse(record.config)).success) {
    throw new ConformanceViolation(
      ROUND_TRIP_RULE,
      `record.config does not parse as storedConfig: ${record.config}`,
    );
  }
  if (!isNotImplemented(configurator.getBackendConfigWithCreds)) {
    const withCreds = configurator.getBackendConfigWithCreds(record);
    const parsed = schemas.backendConfigWithCreds.safeParse(withCreds);
    if (!parsed.success) {
      throw new ConformanceViolation(
        ROUND_TRIP_RULE,
        `getBackendConfigWithCreds gave ${show(withCreds)}: ${parsed.error.message}`,
      );
    }
    // Compare with what the schema makes of the sent config: defaults and key order may differ.
    const sent = schemas.backendConfigWithCreds.safeParse(sentConfig);
    const sentCreds = sent.success ? canonicalJson((sent.data as { creds?: unknown }).creds) : undefined;
    const gotCreds = canonicalJson((withCreds as { creds?: unknown }).creds);
    if (sentCreds !== undefined && sentCreds !== gotCreds) {
      throw new ConformanceViolation(
        ROUND_TRIP_RULE,
        `getBackendConfigWithCreds changed the creds to ${gotCreds}`,
      );
    }
  }
  if (!isNotImplemented(configurator.getBackendConfigWithoutCreds)) {
    const withoutCreds = configurator.getBackendConfigWithoutCreds(record);
    if (typeof withoutCreds === 'object' && withoutCreds !== null && 'creds' in withoutCreds) {
      throw new ConformanceViolation(ROUND_TRIP_RULE, 'getBackendConfigWithoutCreds returned creds');
    }
    const parsed = schemas.backendConfig.safeParse(withoutCreds);
    if (!parsed.success) {
      throw new ConformanceViolation(
        ROUND_TRIP_RULE,
        `getBackendConfigWithoutCreds gave ${show(withoutCreds)}: ${parsed.error.message}`,
      );
    }
  }
}

/** JSON with object keys sorted, for comparing values regardless of key order. */
function canonicalJson(value: unknown): string {
  return (
    JSON.stringify(value, (_key, inner: unknown) =>
      typeof inner === 'object' && inner !== null && !Array.isArray(inner)
        ? Object.fromEntries(Object.entries(inner).sort(([left], [right]) => left.localeCompare(right)))
        : inner,
    ) ?? 'undefined'
  );
}
