/** The local backend's type as dstack's clients see it: `wireBackendType` of @dstack/core, applied to whole answers. */
import { wireBackendType } from '@dstack/core';

export { wireBackendType };

/**
 * A JSON answer with the local backend's type shown as dstack's: every `backend` field (offers,
 * provisioning data, instances) and every entry of a `backends` list (configurations echoed back)
 * that says `local` says `remote`, each type once. Done once where answers are written, so no route can miss it.
 *
 * Copy on write: what holds no `local` is returned as it is, and only the objects and arrays on
 * the way to a changed field are copied. (A deep copy of every answer took 7% of the server's CPU
 * with 2,000 runs alive and the API polled, most answers having nothing to change.)
 */
export function toWireBackendTypes(value: unknown): unknown {
  if (typeof value !== 'object' || value === null) return value;
  if (Array.isArray(value)) {
    let copy: unknown[] | undefined;
    for (let index = 0; index < value.length; index++) {
      const item: unknown = value[index];
      const wired = toWireBackendTypes(item);
      if (wired !== item) {
        copy ??= value.slice();
        copy[index] = wired;
      }
    }
    return copy ?? value;
  }
  const object = value as Record<string, unknown>;
  let copy: Record<string, unknown> | undefined;
  for (const key of Object.keys(object)) {
    const field = object[key];
    const wired = wiredField(key, field);
    if (wired !== field) {
      copy ??= { ...object };
      copy[key] = wired;
    }
  }
  return copy ?? object;
}

function wiredField(key: string, field: unknown): unknown {
  if (key === 'backend' && typeof field === 'string') return wireBackendType(field);
  if (key === 'backends' && Array.isArray(field) && field.every((item) => typeof item === 'string')) {
    // Once each: a filter read back from the wire holds `remote` and `local` (`fromWireBackendTypes`),
    // and dstack's client compares the list it sent with the one echoed back.
    const wired = [...new Set(field.map((item) => wireBackendType(item as string)))];
    return wired.length === field.length && wired.every((type, index) => type === field[index])
      ? field
      : wired;
  }
  return toWireBackendTypes(field);
}
