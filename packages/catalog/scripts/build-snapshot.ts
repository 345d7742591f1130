/**
 * Rebuilds the bundled price snapshot (assets/snapshot/{aws,gcp}.csv and version)
 * from the SkyPilot extracts in catalog-data. Same input, same bytes.
 *
 *   pnpm --filter @dstack/catalog build:snapshot [--data-dir DIR] [--out-dir DIR] [--check] [--no-filter]
 */
import { mkdir, readFile, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { buildSnapshot, readSnapshotSources, renderSnapshotFiles } from '../src/snapshot/build-snapshot.js';

const packageDirectory = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');

const { values } = parseArgs({
  options: {
    'data-dir': { type: 'string', default: path.join(packageDirectory, 'snapshot-data') },
    'out-dir': { type: 'string', default: path.join(packageDirectory, 'assets/snapshot') },
    check: { type: 'boolean', default: false },
    'no-filter': { type: 'boolean', default: false },
    help: { type: 'boolean', short: 'h', default: false },
  },
});

if (values.help) {
  console.log(`Usage: build-snapshot [--data-dir DIR] [--out-dir DIR] [--check] [--no-filter]

  --data-dir DIR  SkyPilot extracts (default: snapshot-data)
  --out-dir DIR   where aws.csv, gcp.csv and version go (default: assets/snapshot)
  --check         compare with the files in --out-dir instead of writing; exit 1 on a difference
  --no-filter     keep the rows gpuhunt's filter() would not publish (for inspection only)`);
  process.exit(0);
}

const dataDirectory = path.resolve(values['data-dir']);
const outDirectory = path.resolve(values['out-dir']);
const sources = await readSnapshotSources(dataDirectory);
const snapshot = buildSnapshot(sources, { applyFilter: !values['no-filter'] });
const files = renderSnapshotFiles(snapshot, sources.date);

console.log(`source: ${dataDirectory} (read ${sources.date})`);
for (const [reason, count] of Object.entries(snapshot.report.counts)) console.log(`  ${count}\t${reason}`);
for (const warning of snapshot.report.warnings) console.warn(`  warning: ${warning}`);
console.log(
  `aws: ${snapshot.aws.length} offers, gcp: ${snapshot.gcp.length} offers, version ${files.version?.trim()}`,
);

if (values.check) {
  const stale: string[] = [];
  for (const [name, text] of Object.entries(files)) {
    const current = await readFile(path.join(outDirectory, name), 'utf8').catch(() => undefined);
    if (current !== text) stale.push(name);
  }
  if (stale.length > 0) {
    console.error(`out of date in ${outDirectory}: ${stale.join(', ')}; run build:snapshot`);
    process.exit(1);
  }
  console.log(`${outDirectory} is up to date`);
} else {
  await mkdir(outDirectory, { recursive: true });
  for (const [name, text] of Object.entries(files)) await writeFile(path.join(outDirectory, name), text);
  console.log(`wrote ${Object.keys(files).join(', ')} to ${outDirectory}`);
}
