/**
 * A small line chart drawn as inline SVG: the console needs a handful of sparkline-sized charts,
 * not a charting library. Times run left to right over the samples' own span; values from 0 to
 * a little above the highest one (at least `scaleFloor`), so a job using 20 MB of a 64 GB machine
 * still shows its changes; the limit is written beside the chart instead.
 */

export interface ChartSeries {
  label: string;
  /** Sample times (ms since the epoch) and values, in any order. */
  points: ReadonlyArray<{ time: number; value: number }>;
}

const WIDTH = 300;
const HEIGHT = 80;
const COLORS = ['var(--accent)', 'var(--ok)', 'var(--wait)', 'var(--bad)'];

export function LineChart({
  title,
  series,
  scaleFloor = 0,
  limit,
  format,
  testId,
}: {
  title: string;
  series: readonly ChartSeries[];
  /** The lowest top the scale may have (100 for percentages). */
  scaleFloor?: number;
  /** What the job may use at most (its memory, its CPUs), written under the chart. */
  limit?: number | undefined;
  format(value: number): string;
  testId: string;
}) {
  const all = series.flatMap((line) => line.points);
  const times = all.map((point) => point.time);
  const start = Math.min(...times);
  const span = Math.max(Math.max(...times) - start, 1);
  const top = Math.max(scaleFloor, Math.max(...all.map((point) => point.value)) * 1.15, Number.MIN_VALUE);
  const toPoints = (line: ChartSeries) =>
    [...line.points]
      .sort((a, b) => a.time - b.time)
      .map((point) => {
        const x = ((point.time - start) / span) * WIDTH;
        const y = HEIGHT - (point.value / top) * HEIGHT;
        return `${x.toFixed(1)},${y.toFixed(1)}`;
      })
      .join(' ');
  const latest = (line: ChartSeries) =>
    line.points.reduce((newest, point) => (point.time > newest.time ? point : newest));
  return (
    <figure className="chart" data-testid={testId}>
      <figcaption>
        <span>{title}</span>
        <span className="chart-values">
          {series.map((line, index) => (
            <span key={line.label} style={{ color: COLORS[index % COLORS.length] }}>
              {series.length > 1 ? `${line.label} ` : ''}
              {format(latest(line).value)}
            </span>
          ))}
        </span>
      </figcaption>
      <svg viewBox={`0 0 ${WIDTH} ${HEIGHT}`} preserveAspectRatio="none" role="img" aria-label={title}>
        <line x1="0" y1={HEIGHT} x2={WIDTH} y2={HEIGHT} className="chart-axis" />
        {series.map((line, index) => (
          <polyline
            key={line.label}
            points={toPoints(line)}
            fill="none"
            stroke={COLORS[index % COLORS.length]}
            strokeWidth="2"
            vectorEffect="non-scaling-stroke"
            data-points={line.points.length}
          />
        ))}
      </svg>
      <span className="muted chart-scale">
        scale {format(top)}
        {limit ? ` · limit ${format(limit)}` : ''}
      </span>
    </figure>
  );
}
