/**
 * Python's `round(value, digits)`: it rounds the exact binary value (2.675 is
 * stored as 2.67499999… and goes down) and sends exact ties to the even neighbour
 * (`round(3.75, 1)` is 3.8, `round(0.125, 2)` is 0.12). gpuhunt rounds GCP memory
 * to 1 decimal and prices to 6 decimals this way.
 */
export function pythonRound(value: number, digits: number): number {
  if (!Number.isFinite(value) || value === 0) return value;
  const sign = value < 0 ? -1 : 1;
  // toFixed is exact, so the extra places show the binary value's true decimal tail.
  const text = Math.abs(value).toFixed(Math.min(100, digits + 25));
  const cut = text.indexOf('.') + (digits > 0 ? digits + 1 : 0);
  const kept = text.slice(0, cut);
  const tail = text.slice(cut).replace('.', '');
  const lastKeptDigit = Number(kept.replace('.', '').at(-1));
  const roundUp =
    tail[0] !== undefined &&
    (tail[0] > '5' || (tail[0] === '5' && (/[1-9]/.test(tail.slice(1)) || lastKeptDigit % 2 === 1)));
  const magnitude = Number(kept) + (roundUp ? 10 ** -digits : 0);
  return sign * Number(magnitude.toFixed(digits));
}
