/**
 * GPU names between dstack (gpuhunt's `A100`, `RTX4090`, `A5000`) and Vast.ai (`A100 PCIE`,
 * `RTX 4090`, `RTX A5000`), both ways, as gpuhunt's Vast.ai provider maps them.
 */

/** Names Vast.ai spells as dstack does. */
const SAME_NAMES: ReadonlySet<string> = new Set(['L40S', 'L40', 'A10', 'A40', 'L4', 'A100X', 'H200']);

/** dstack names with Vast.ai names of their own (several for GPUs Vast.ai splits by form factor). */
const DIRECT_NAMES: Readonly<Record<string, readonly string[]>> = {
  H200NVL: ['H200 NVL'],
  P100: ['Tesla P100'],
  T4: ['Tesla T4'],
  P4: ['Tesla P4'],
  P40: ['Tesla P40'],
  V100: ['Tesla V100'],
  A100: ['A100 PCIE', 'A100 SXM4'],
  A800PCIE: ['A800 PCIE'],
  H100: ['H100 PCIE', 'H100 SXM'],
  H100NVL: ['H100 NVL'],
};

/** Spelling rules, tried in order after the tables (gpuhunt's regex rules). */
const PATTERN_RULES: ReadonlyArray<readonly [RegExp, string]> = [
  [/^RTX(\d{4}\D?)$/, 'RTX $1'],
  [/^QRTX(\d{4})$/, 'Q RTX $1'],
  [/^RTX(\d{4})Ada$/, 'RTX $1Ada'],
  [/^RTX(\d{4}\D?)Ti$/, 'RTX $1 Ti'],
  [/^A(\d{4})/, 'RTX A$1'],
];

/** Vast.ai's names for a dstack GPU name; `[]` when no rule knows it (the search then asks for all). */
export function toVastAiGpuNames(dstackName: string): string[] {
  if (SAME_NAMES.has(dstackName)) return [dstackName];
  const direct = DIRECT_NAMES[dstackName];
  if (direct) return [...direct];
  for (const [pattern, replacement] of PATTERN_RULES) {
    if (pattern.test(dstackName)) return [dstackName.replace(pattern, replacement)];
  }
  return [];
}

/** dstack's name for a Vast.ai GPU name: `RTX A5000` → `A5000`, `Tesla T4` → `T4`, `A100 SXM4` → `A100`, `RTX 4090` → `RTX4090`. */
export function fromVastAiGpuName(vastName: string): string {
  const name = vastName.replace('RTX A', 'A').replace('Tesla ', '');
  if (name.startsWith('A100 ')) return 'A100';
  if (name.startsWith('H100 ') && !name.includes('NVL')) return 'H100';
  return name.replaceAll(' ', '');
}
