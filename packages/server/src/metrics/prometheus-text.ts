/**
 * Prometheus' text exposition format (version 0.0.4): metric families with HELP and TYPE lines,
 * one sample per line, label values escaped.
 */

export type MetricType = 'counter' | 'gauge' | 'histogram';

export interface MetricFamily {
  name: string;
  type: MetricType;
  help: string;
  /** `name`: the sample's own name when it is not the family's (a histogram's `_bucket`, `_sum`, `_count`). */
  samples: Array<{ labels: Record<string, string>; value: number; name?: string }>;
}

export const PROMETHEUS_CONTENT_TYPE = 'text/plain; version=0.0.4; charset=utf-8';

function escapeLabelValue(value: string): string {
  return value.replace(/\\/g, '\\\\').replace(/"/g, '\\"').replace(/\n/g, '\\n');
}

function escapeHelp(text: string): string {
  return text.replace(/\\/g, '\\\\').replace(/\n/g, '\\n');
}

function formatValue(value: number): string {
  if (Number.isNaN(value)) return 'NaN';
  if (value === Number.POSITIVE_INFINITY) return '+Inf';
  if (value === Number.NEGATIVE_INFINITY) return '-Inf';
  return String(value);
}

/** The families with samples, in the order given; a family without samples is left out, as dstack does. */
export function renderPrometheusText(families: readonly MetricFamily[]): string {
  const lines: string[] = [];
  for (const family of families) {
    if (family.samples.length === 0) continue;
    lines.push(`# HELP ${family.name} ${escapeHelp(family.help)}`);
    lines.push(`# TYPE ${family.name} ${family.type}`);
    for (const sample of family.samples) {
      const labels = Object.entries(sample.labels)
        .map(([name, value]) => `${name}="${escapeLabelValue(value)}"`)
        .join(',');
      lines.push(`${sample.name ?? family.name}${labels ? `{${labels}}` : ''} ${formatValue(sample.value)}`);
    }
  }
  return lines.length === 0 ? '' : `${lines.join('\n')}\n`;
}

/** Families by name, each declared once with its type and help. */
export class MetricFamilies {
  private readonly families = new Map<string, MetricFamily>();

  constructor(declarations: ReadonlyArray<readonly [name: string, type: MetricType, help: string]>) {
    for (const [name, type, help] of declarations) this.families.set(name, { name, type, help, samples: [] });
  }

  add(name: string, labels: Record<string, string>, value: number): void {
    const family = this.families.get(name);
    if (!family) throw new Error(`metric ${name} is not declared`);
    family.samples.push({ labels, value });
  }

  values(): MetricFamily[] {
    return [...this.families.values()];
  }
}
