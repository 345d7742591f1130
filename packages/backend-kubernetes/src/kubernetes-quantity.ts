/**
 * Kubernetes resource quantities (`resource.Quantity`): a decimal number with a binary
 * (`Ki`…`Ei`), decimal (`n`, `u`, `m`, `k`, `M`…`E`) or exponent (`e3`) suffix.
 */
const SUFFIXES: Record<string, number> = {
  Ki: 2 ** 10,
  Mi: 2 ** 20,
  Gi: 2 ** 30,
  Ti: 2 ** 40,
  Pi: 2 ** 50,
  Ei: 2 ** 60,
  n: 1e-9,
  u: 1e-6,
  m: 1e-3,
  '': 1,
  k: 1e3,
  M: 1e6,
  G: 1e9,
  T: 1e12,
  P: 1e15,
  E: 1e18,
};

const QUANTITY = /^([+-]?(?:\d+\.?\d*|\.\d+))(?:([eE][+-]?\d+)|(Ki|Mi|Gi|Ti|Pi|Ei|n|u|m|k|M|G|T|P|E)?)$/;

/** The quantity in base units (cores, bytes, devices); throws naming the text when malformed. */
export function parseQuantity(text: string): number {
  const match = QUANTITY.exec(String(text).trim());
  if (!match) throw new Error(`not a Kubernetes quantity: "${text}"`);
  const number = Number(match[1]);
  if (match[2] !== undefined) return number * 10 ** Number(match[2].slice(1));
  return number * (SUFFIXES[match[3] ?? ''] ?? 1);
}
