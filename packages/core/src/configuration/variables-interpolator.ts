/**
 * `${{ namespace.name }}` references, as dstack's `utils/interpolator.py`
 * (`VariablesInterpolator`): `$$` is an escaped `$`, references of skipped namespaces
 * (`secrets`, resolved later by the server) stay as written, and an unknown reference is an
 * error listing it. Ported token for token so a configuration means the same in both.
 */
import { DstackError } from '../errors.js';

/** Interpolation failed; the message names references, never values (they may be secrets). */
export class InterpolatorError extends DstackError {
  static override readonly marker: string = '@dstack/core/InterpolatorError';
  override readonly name = 'InterpolatorError';
}

const OPENING = '${{';
const CLOSING = '}}';
const FIRST_CHAR = /^[A-Za-z_]$/;
const NAME_CHAR = /^[A-Za-z0-9_.]$/;

/** Checks a reference name; true when it is acceptable. */
export type NameValidator = (name: string) => boolean;

/** `namespace.name`: one dot, each part starting with a letter or `_`. */
export function isValidReferenceName(name: string): boolean {
  const dot = name.indexOf('.');
  if (name.split('.').length !== 2 || dot <= 0 || dot >= name.length - 1) return false;
  if (!FIRST_CHAR.test(name[0]!) || !FIRST_CHAR.test(name[dot + 1]!)) return false;
  return [...name].every((char) => NAME_CHAR.test(char));
}

const GROUPS_IP_REFERENCE = /^groups\[(\d+)\]\.(nodes|replicas)\[(\d+)\]\.IP_ADDRESS$/;

/** `groups[i].nodes[j].IP_ADDRESS` (or `replicas`): resolved on the nodes, left alone here. */
export function isValidGroupsIpReference(name: string): boolean {
  return GROUPS_IP_REFERENCE.test(name.trim());
}

function namespaceRoot(name: string): string {
  return name.split('.')[0]!.split('[')[0]!;
}

export class VariablesInterpolator {
  readonly #variables = new Map<string, string>();
  readonly #skip: Map<string, NameValidator>;

  /**
   * `namespaces`: `{env: {A: '1'}}` makes `${{ env.A }}` known. `skip`: namespaces left as
   * written, each with the validator its references must pass (a list uses the default one).
   */
  constructor(
    namespaces: Readonly<Record<string, Readonly<Record<string, string>>>>,
    skip: readonly string[] | Readonly<Record<string, NameValidator>> = [],
  ) {
    for (const [namespace, values] of Object.entries(namespaces)) {
      for (const [key, value] of Object.entries(values)) this.#variables.set(`${namespace}.${key}`, value);
    }
    this.#skip = Array.isArray(skip)
      ? new Map(skip.map((namespace) => [namespace, isValidReferenceName]))
      : new Map(Object.entries(skip as Record<string, NameValidator>));
  }

  /** The text with known references replaced, and the names of unknown ones. */
  interpolate(text: string): { text: string; missing: string[] } {
    const tokens: string[] = [];
    const missing: string[] = [];
    let start = 0;
    while (start < text.length) {
      const dollar = text.indexOf('$', start);
      if (dollar === -1 || dollar === text.length - 1) {
        tokens.push(text.slice(start));
        break;
      }
      if (text[dollar + 1] === '$') {
        // `$$` is an escaped `$`.
        tokens.push(text.slice(start, dollar + 1));
        start = dollar + 2;
        continue;
      }
      const opening = text.indexOf(OPENING, start);
      if (opening === -1) {
        tokens.push(text.slice(start));
        break;
      }
      tokens.push(text.slice(start, opening));
      const closing = text.indexOf(CLOSING, opening);
      if (closing === -1) throw new InterpolatorError(`No pattern closing: ${text.slice(opening)}`);
      const name = text.slice(opening + OPENING.length, closing).trim();
      const skipValidator = this.#skip.get(namespaceRoot(name));
      if (skipValidator) {
        if (!skipValidator(name)) throw new InterpolatorError(`Illegal reference name: ${name}`);
        tokens.push(text.slice(opening, closing + CLOSING.length));
      } else if (!isValidReferenceName(name)) {
        throw new InterpolatorError(`Illegal reference name: ${name}`);
      } else if (this.#variables.has(name)) {
        tokens.push(this.#variables.get(name)!);
      } else {
        missing.push(name);
      }
      start = closing + CLOSING.length;
    }
    return { text: tokens.join(''), missing };
  }

  /** The text with every reference replaced; an unknown one is an `InterpolatorError`. */
  interpolateOrError(text: string): string {
    const { text: result, missing } = this.interpolate(text);
    if (missing.length === 0) return result;
    // dstack prints the Python list: ['env.A', 'run.x'].
    const listed = missing.map((name) => `'${name}'`).join(', ');
    throw new InterpolatorError(`Failed to interpolate due to missing vars: [${listed}]`);
  }
}
