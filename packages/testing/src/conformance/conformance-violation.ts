/** A backend broke a rule of the contract; the message names the rule and what was seen. */
export class ConformanceViolation extends Error {
  override readonly name = 'ConformanceViolation';
  constructor(
    /** The rule, e.g. `offers are ordered by price, cheapest first`. */
    readonly rule: string,
    detail: string,
    options?: { cause?: unknown },
  ) {
    super(`${rule}: ${detail}`, options);
  }
}

/** Short, readable rendering of a value for violation messages. */
export function show(value: unknown): string {
  if (value instanceof Error) return `${value.name}: ${value.message}`;
  const text = JSON.stringify(value);
  if (text === undefined) return String(value);
  return text.length > 300 ? `${text.slice(0, 300)}…` : text;
}
