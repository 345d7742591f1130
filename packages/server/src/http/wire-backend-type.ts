/** The local backend's type as dstack's clients see it: `wireBackendType` of @dstack/core, applied to whole answers. */
import { wireBackendType } from '@dstack/core';

export { wireBackendType };

function isPlainObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/**
 * A JSON answer with the local backend's type shown as dstack's: every `backend` field (offers,
 * provisioning data, instances) and every entry of a `backends` list (configurations echoed back)
 * that says `local` says `remote`, each type once. Done once where answers are written, so no route can miss it.
 */
export function toWireBackendTypes(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(toWireBackendTypes);
  if (!isPlainObject(value)) return value;
  const out: Record<string, unknown> = {};
  for (const [key, field] of Object.entries(value)) {
    if (key === 'backend' && typeof field === 'string') out[key] = wireBackendType(field);
    else if (key === 'backends' && Array.isArray(field) && field.every((item) => typeof item === 'string')) {
      // Once each: a filter read back from the wire holds `remote` and `local` (`fromWireBackendTypes`),
      // and dstack's client compares the list it sent with the one echoed back.
      out[key] = [...new Set(field.map((item) => wireBackendType(item as string)))];
    } else out[key] = toWireBackendTypes(field);
  }
  return out;
}
