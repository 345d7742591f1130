// Builds the EC2 emulator's instance-type and price data from the AWS rows of the catalog's
// snapshot data (SkyPilot's catalog, itself read from DescribeInstanceTypes, the price list and
// the spot price history): `node packages/testing/scripts/build-aws-emulator-data.mjs`.
// EC2 has types the catalog's CPU sample leaves out and dstack still launches: t3.micro is its
// default gateway type. `aws-t3-small-types.csv` adds t3.nano, t3.micro and t3.small (2 vCPUs;
// 0.5, 1 and 2 GiB, as DescribeInstanceTypes gives them; on-demand prices of the AWS price list)
// in the zones where the sample has t3.medium, with spot prices at t3.medium's zone ratio.
import { readFileSync, writeFileSync } from 'node:fs';

const sources = [
  ...['aws-gpu.csv', 'aws-cpu-sample.csv'].map(
    (name) => new URL(`../../catalog/snapshot-data/${name}`, import.meta.url),
  ),
  new URL('./aws-t3-small-types.csv', import.meta.url),
];
const output = new URL('../src/emulators/aws/__fixtures__/aws-instance-offerings.json', import.meta.url);

/** Splits one CSV line; fields may be double-quoted (GpuInfo holds commas). */
function splitCsvLine(line) {
  const fields = [];
  let field = '';
  let quoted = false;
  for (let index = 0; index < line.length; index += 1) {
    const char = line[index];
    if (quoted) {
      if (char === '"' && line[index + 1] === '"') {
        field += '"';
        index += 1;
      } else if (char === '"') quoted = false;
      else field += char;
    } else if (char === '"') quoted = true;
    else if (char === ',') {
      fields.push(field);
      field = '';
    } else field += char;
  }
  fields.push(field);
  return fields;
}

/** The first GPU of SkyPilot's GpuInfo, a Python literal: `{'Gpus': [{'Name': 'A100', …}]}`. */
function parseGpuInfo(text) {
  if (text === '') return undefined;
  const name = /'Name': '([^']*)'/.exec(text)?.[1];
  const manufacturer = /'Manufacturer': '([^']*)'/.exec(text)?.[1];
  const count = /'Count': (\d+)/.exec(text)?.[1];
  const memory = /'SizeInMiB': (\d+)/.exec(text)?.[1];
  if (!name || !manufacturer || !count || !memory) return undefined;
  return { name, manufacturer, count: Number(count), memoryMiB: Number(memory) };
}

const instanceTypes = {};
const offerings = [];
for (const source of sources) {
  const [header, ...lines] = readFileSync(source, 'utf8').trim().split('\n');
  const columns = splitCsvLine(header);
  for (const line of lines) {
    const fields = splitCsvLine(line);
    const row = Object.fromEntries(columns.map((column, index) => [column, fields[index] ?? '']));
    const type = row.InstanceType;
    if (!instanceTypes[type]) {
      const gpu = parseGpuInfo(row.GpuInfo);
      instanceTypes[type] = {
        vcpus: Number(row.vCPUs),
        memoryMiB: Math.round(Number(row.MemoryGiB) * 1024),
        ...(gpu ? { gpu } : {}),
      };
    }
    // [type, region, zone id, on-demand USD/h or null, spot USD/h or null]
    offerings.push([
      type,
      row.Region,
      row.AvailabilityZone,
      row.Price === '' ? null : Number(row.Price),
      row.SpotPrice === '' ? null : Number(row.SpotPrice),
    ]);
  }
}
offerings.sort((a, b) => a[1].localeCompare(b[1]) || a[2].localeCompare(b[2]) || a[0].localeCompare(b[0]));
const sortedTypes = Object.fromEntries(Object.entries(instanceTypes).sort(([a], [b]) => a.localeCompare(b)));
const lines = [
  '{',
  `  "source": "packages/catalog/snapshot-data/aws-{gpu,cpu-sample}.csv (SkyPilot catalog v7, read 2026-11-21) and packages/testing/scripts/aws-t3-small-types.csv",`,
  '  "offeringColumns": ["instanceType", "region", "zoneId", "onDemandPrice", "spotPrice"],',
  '  "instanceTypes": {',
  Object.entries(sortedTypes)
    .map(([name, spec]) => `    ${JSON.stringify(name)}: ${JSON.stringify(spec)}`)
    .join(',\n'),
  '  },',
  '  "offerings": [',
  offerings.map((offering) => `    ${JSON.stringify(offering)}`).join(',\n'),
  '  ]',
  '}',
];
writeFileSync(output, `${lines.join('\n')}\n`);
console.log(
  `${Object.keys(sortedTypes).length} instance types, ${offerings.length} offerings → ${output.pathname}`,
);
