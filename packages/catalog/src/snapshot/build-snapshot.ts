import { createHash } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import type { CatalogItem } from '../catalog-item.js';
import { formatCatalogCsv } from '../csv/catalog-csv.js';
import { filterAwsOffers, filterGcpOffers } from '../providers/gpuhunt-filters.js';
import { type ConversionReport, createConversionReport } from './conversion-report.js';
import { convertAwsRows } from './convert-aws.js';
import { convertGcpRows } from './convert-gcp.js';
import { parseCsvRecords } from './csv-records.js';

/** The SkyPilot extracts the bundled snapshot is made from (see catalog-data/README.md). */
export interface SnapshotSources {
  /** `aws-gpu.csv` followed by `aws-cpu-sample.csv`, as text. */
  readonly awsCsvTexts: readonly string[];
  readonly gcpCsvText: string;
  /** The day the source was read, `YYYY-MM-DD`. */
  readonly date: string;
}

export interface SnapshotOptions {
  /** Apply gpuhunt's published-catalog `filter()`; default true, as the published gpuhunt catalog is. */
  readonly applyFilter?: boolean;
}

export interface Snapshot {
  readonly aws: CatalogItem[];
  readonly gcp: CatalogItem[];
  readonly report: ConversionReport;
}

export const SNAPSHOT_SOURCE_FILES = {
  aws: ['aws-gpu.csv', 'aws-cpu-sample.csv'],
  gcp: 'gcp-gpu.csv',
  readme: 'README.md',
} as const;

/** Pure: converts the source texts into gpuhunt-shaped offers, filtered and sorted by price. */
export function buildSnapshot(sources: SnapshotSources, options: SnapshotOptions = {}): Snapshot {
  const report = createConversionReport();
  const awsRecords = sources.awsCsvTexts.flatMap((text) => parseCsvRecords(text));
  let aws = convertAwsRows(awsRecords, report);
  let gcp = convertGcpRows(parseCsvRecords(sources.gcpCsvText), report);
  if (options.applyFilter ?? true) {
    aws = filterAwsOffers(aws);
    const published = new Set(filterGcpOffers(gcp));
    gcp = gcp.filter((item) => published.has(item) || isGcpCpuStandIn(item));
  }
  return { aws, gcp, report };
}

/**
 * GCP machine families whose CPU-only rows the snapshot keeps although gpuhunt's filter drops
 * them. The extract has no prices of the CPU families gpuhunt publishes (e2, n2, c4…), so without
 * these a CPU-only run planned from the snapshot would land on a GPU machine; n1-standard (real
 * prices, collected by gpuhunt and launchable by the GCP backend) stands in.
 */
export const GCP_SNAPSHOT_CPU_STAND_INS: readonly string[] = ['n1-standard-'];

function isGcpCpuStandIn(item: CatalogItem): boolean {
  return (
    item.gpuCount === 0 && GCP_SNAPSHOT_CPU_STAND_INS.some((prefix) => item.instanceName.startsWith(prefix))
  );
}

/**
 * The snapshot version, gpuhunt-style `YYYYMMDD-<tag>`: the source date plus the
 * first 8 hex digits of a SHA-256 over the published files, so the same input
 * always gives the same version and any change of content gives a new one.
 */
export function snapshotVersion(date: string, files: Readonly<Record<string, string>>): string {
  if (!/^\d{4}-\d{2}-\d{2}$/.test(date)) throw new Error(`snapshot date must be YYYY-MM-DD, got "${date}"`);
  const hash = createHash('sha256');
  for (const name of Object.keys(files).sort()) hash.update(`${name}\n${files[name]}\n`);
  return `${date.replaceAll('-', '')}-${hash.digest('hex').slice(0, 8)}`;
}

/** The files of `assets/snapshot/`: gpuhunt-format CSVs and the version (one line). */
export function renderSnapshotFiles(snapshot: Snapshot, date: string): Record<string, string> {
  const files: Record<string, string> = {
    'aws.csv': formatCatalogCsv(snapshot.aws),
    'gcp.csv': formatCatalogCsv(snapshot.gcp),
  };
  return { ...files, version: `${snapshotVersion(date, files)}\n` };
}

/** The date line of catalog-data/README.md (`Date read: 2026-11-21`). */
export function readSourceDate(readme: string): string {
  const match = /Date read:\s*(\d{4}-\d{2}-\d{2})/.exec(readme);
  if (!match?.[1]) throw new Error('catalog-data README.md has no "Date read: YYYY-MM-DD" line');
  return match[1];
}

/** Reads the source files from a catalog-data directory. */
export async function readSnapshotSources(dataDirectory: string): Promise<SnapshotSources> {
  const read = (name: string) => readFile(path.join(dataDirectory, name), 'utf8');
  const [readme, gcpCsvText, ...awsCsvTexts] = await Promise.all([
    read(SNAPSHOT_SOURCE_FILES.readme),
    read(SNAPSHOT_SOURCE_FILES.gcp),
    ...SNAPSHOT_SOURCE_FILES.aws.map(read),
  ]);
  return { awsCsvTexts, gcpCsvText, date: readSourceDate(readme) };
}
