/** What a conversion dropped or adjusted, by reason, so the build script can print it. */
export interface ConversionReport {
  /** Source rows or would-be offers dropped or adjusted, counted per reason. */
  readonly counts: Record<string, number>;
  /** Source facts that looked inconsistent but were kept (first value wins). */
  readonly warnings: string[];
}

export function createConversionReport(): ConversionReport {
  return { counts: {}, warnings: [] };
}

export function countEvent(report: ConversionReport, reason: string, count = 1): void {
  report.counts[reason] = (report.counts[reason] ?? 0) + count;
}
