/**
 * The engine of "honest configurations": every field a configuration schema accepts has one
 * decision here, honoured (with where) or refused. A refused field that a configuration sets is
 * a 400 when the server plans or applies it, naming the field, instead of being dropped.
 * The tables themselves are `runs/unsupported-fields.ts` and `fleets/unsupported-fields.ts`;
 * `field-decisions.test.ts` walks every schema and fails on a field without a decision.
 */
import { hasCapability, ServerClientError } from '@dstack/core';
import type { ProjectBackend } from './backends/registry.js';

/** The server does what the field says; `where` names the code that does it. */
export interface HonouredField {
  honoured: string;
  /** The decision covers the fields under it too (a value's own form: a range's min and max, a key's content). */
  subtree?: true;
}

/** The server does not do what the field says (yet): setting it is refused. */
export interface RefusedField {
  /** Why, or what is missing; the refusal says "not supported yet" unless `check` says more. */
  refused: string;
  subtree?: true;
  /**
   * Which values are refused: returns the refusal's text for a value the server cannot honour,
   * null for one it can. Default: any set value (not null, false, an empty list or mapping).
   */
  check?: (value: unknown) => string | null;
  /** Configuration fields (merged into a minimal configuration) that set it in a refused way, for the test. */
  example: Record<string, unknown>;
}

export type FieldDecision = HonouredField | RefusedField;

/** Field path (`resources.shm_size`, `replicas[].count`) → decision. */
export type FieldDecisions = Readonly<Record<string, FieldDecision>>;

export function isRefused(decision: FieldDecision): decision is RefusedField {
  return 'refused' in decision;
}

/** Not set: absent, null, `false`, an empty list or mapping (the defaults of the refused fields). */
export function isSet(value: unknown): boolean {
  if (value === undefined || value === null || value === false) return false;
  if (Array.isArray(value)) return value.length > 0;
  if (typeof value === 'object') return Object.keys(value).length > 0;
  return true;
}

/** The decision that covers `path`: its own, or the nearest ancestor's that covers its subtree. */
export function decisionFor(decisions: FieldDecisions, path: string): FieldDecision | undefined {
  const own = decisions[path];
  if (own) return own;
  for (let end = path.length - 1; end > 0; end--) {
    if (path[end] !== '.' && path[end] !== '[') continue;
    const ancestor = decisions[path.slice(0, end)];
    if (ancestor) return ancestor.subtree ? ancestor : undefined;
  }
  return decisions['']?.subtree ? decisions[''] : undefined;
}

/** The values at `path` in `value`, with their concrete paths (`[]` becomes each index). */
export function valuesAt(value: unknown, path: string): Array<{ path: string; value: unknown }> {
  if (path === '') return [{ path: '', value }];
  let found: Array<{ path: string; value: unknown }> = [{ path: '', value }];
  for (const segment of path.split('.')) {
    const arrays = segment.match(/\[\]/g)?.length ?? 0;
    const key = segment.replace(/\[\]/g, '');
    const next: typeof found = [];
    for (const item of found) {
      if (typeof item.value !== 'object' || item.value === null || Array.isArray(item.value)) continue;
      const field = (item.value as Record<string, unknown>)[key];
      if (field === undefined) continue;
      let level = [{ path: item.path === '' ? key : `${item.path}.${key}`, value: field }];
      for (let depth = 0; depth < arrays; depth++) {
        level = level.flatMap((entry) =>
          Array.isArray(entry.value)
            ? entry.value.map((element, index) => ({ path: `${entry.path}[${index}]`, value: element }))
            : [],
        );
      }
      next.push(...level);
    }
    found = next;
  }
  return found;
}

/** `'not supported yet'`, or the check's own text, for each refused field the configuration sets. */
export function refusedFields(
  decisions: FieldDecisions,
  configuration: unknown,
): Array<{ path: string; reason: string }> {
  const refusals: Array<{ path: string; reason: string }> = [];
  for (const [path, decision] of Object.entries(decisions)) {
    if (!isRefused(decision)) continue;
    for (const found of valuesAt(configuration, path)) {
      const reason = decision.check
        ? decision.check(found.value)
        : isSet(found.value)
          ? 'not supported yet'
          : null;
      if (reason !== null) refusals.push({ path: found.path, reason });
    }
  }
  return refusals;
}

/**
 * Throws one 400 (`unsupported_fields`) listing every refusal, each as `path: reason`;
 * `prefix` is where the configuration sits in the request body, for the error's `fields`.
 */
export function refuseFields(
  refusals: ReadonlyArray<{ path: string; reason: string }>,
  prefix: readonly string[],
): void {
  if (refusals.length === 0) return;
  throw new ServerClientError(
    `the configuration sets fields this server does not support yet: ${refusals
      .map((refusal) => `${refusal.path}: ${refusal.reason}`)
      .join('; ')}`,
    {
      code: 'unsupported_fields',
      fields: refusals.map((refusal) => [...prefix, ...refusal.path.split(/[.[\]]+/).filter(Boolean)]),
    },
  );
}

/**
 * `reservation` needs a backend that honours it (the `reservations` capability, dstack's
 * `BACKENDS_WITH_RESERVATION_SUPPORT`) among those the configuration may use.
 */
export function reservationRefusal(
  reservation: string | undefined,
  wanted: readonly string[] | undefined,
  backends: readonly ProjectBackend[],
): { path: string; reason: string } | null {
  if (reservation === undefined) return null;
  const eligible = backends.filter((backend) => !wanted?.length || wanted.includes(backend.type));
  if (eligible.some((backend) => hasCapability(backend.compute, 'reservations'))) return null;
  const names = eligible.map((backend) => backend.type).join(', ') || 'none';
  return { path: 'reservation', reason: `no eligible backend supports reservations (eligible: ${names})` };
}
