// Builds the Compute Engine emulator's machine types, accelerator types and prices from the GCP
// rows of the catalog's snapshot data (SkyPilot's catalog, itself read from the Compute API and
// the Billing Catalog): `node packages/testing/scripts/build-gcp-emulator-data.mjs`.
// TPU rows are left out: TPUs are not Compute Engine machine types (they go through tpu_v2).
import { readFileSync, writeFileSync } from 'node:fs';

const source = new URL('../../catalog/snapshot-data/gcp-gpu.csv', import.meta.url);
const output = new URL('../src/emulators/gcp/__fixtures__/gcp-machine-offerings.json', import.meta.url);

/** SkyPilot's accelerator names → Compute Engine accelerator types (`gcloud compute accelerator-types list`). */
const ACCELERATOR_TYPES = {
  A100: 'nvidia-tesla-a100',
  'A100-80GB': 'nvidia-a100-80gb',
  B200: 'nvidia-b200',
  H100: 'nvidia-h100-80gb',
  'H100-MEGA': 'nvidia-h100-mega-80gb',
  H200: 'nvidia-h200-141gb',
  L4: 'nvidia-l4',
  P100: 'nvidia-tesla-p100',
  P4: 'nvidia-tesla-p4',
  T4: 'nvidia-tesla-t4',
  V100: 'nvidia-tesla-v100',
};

/** The GPUs built into a machine type (GCP's machine-type definitions; see the snapshot README). */
function builtInGpus(type) {
  let match = /^a2-(highgpu|megagpu|ultragpu)-(\d+)g$/.exec(type);
  if (match)
    return {
      type: match[1] === 'ultragpu' ? 'nvidia-a100-80gb' : 'nvidia-tesla-a100',
      count: Number(match[2]),
    };
  match = /^a3-(highgpu|edgegpu|megagpu|ultragpu)-(\d+)g(-nolssd)?$/.exec(type);
  if (match) {
    const accelerator = {
      highgpu: 'nvidia-h100-80gb',
      edgegpu: 'nvidia-h100-80gb',
      megagpu: 'nvidia-h100-mega-80gb',
      ultragpu: 'nvidia-h200-141gb',
    }[match[1]];
    return { type: accelerator, count: Number(match[2]) };
  }
  match = /^g2-standard-(\d+)$/.exec(type);
  if (match) return { type: 'nvidia-l4', count: { 24: 2, 48: 4, 96: 8 }[match[1]] ?? 1 };
  return undefined;
}

const [header, ...lines] = readFileSync(source, 'utf8').trim().split('\n');
const columns = header.split(',');
const machineTypes = {};
const accelerators = {};
const machineOfferings = [];
const acceleratorOfferings = [];
for (const line of lines) {
  // GpuInfo holds commas: the fields after it are counted from the end.
  const fields = line.split(',');
  const head = fields.slice(0, 5);
  const tail = fields.slice(-4);
  const gpuInfo = fields.slice(5, -4).join(',');
  const row = Object.fromEntries(
    columns.map((column, index) => [
      column,
      index < 5 ? head[index] : index === 5 ? gpuInfo : tail[index - 6],
    ]),
  );
  const price = row.Price === '' ? null : Number(row.Price);
  const spot = row.SpotPrice === '' ? null : Number(row.SpotPrice);
  if (row.InstanceType !== '') {
    const type = row.InstanceType;
    if (!machineTypes[type]) {
      const gpu = builtInGpus(type);
      machineTypes[type] = {
        vcpus: Number(row.vCPUs),
        memoryMb: Math.round(Number(row.MemoryGiB) * 1024),
        ...(gpu ? { accelerators: gpu } : {}),
      };
    }
    // [machine type, zone, on-demand USD/h of the VM (CPU and RAM) or null, spot USD/h or null]
    machineOfferings.push([type, row.AvailabilityZone, price, spot]);
    continue;
  }
  const acceleratorType = ACCELERATOR_TYPES[row.AcceleratorName];
  if (!acceleratorType) continue; // a TPU slice
  const memory = /'SizeInMiB': (\d+)/.exec(row.GpuInfo)?.[1];
  accelerators[acceleratorType] = { name: row.AcceleratorName, memoryMiB: Number(memory) };
  // [accelerator type, count, zone, on-demand USD/h for that many or null, spot USD/h or null]
  acceleratorOfferings.push([
    acceleratorType,
    Number(row.AcceleratorCount),
    row.AvailabilityZone,
    price,
    spot,
  ]);
}
machineOfferings.sort((a, b) => a[1].localeCompare(b[1]) || a[0].localeCompare(b[0]));
acceleratorOfferings.sort((a, b) => a[2].localeCompare(b[2]) || a[0].localeCompare(b[0]) || a[1] - b[1]);
const sorted = (object) => Object.fromEntries(Object.entries(object).sort(([a], [b]) => a.localeCompare(b)));
const entries = (object) =>
  Object.entries(sorted(object))
    .map(([name, spec]) => `    ${JSON.stringify(name)}: ${JSON.stringify(spec)}`)
    .join(',\n');
const out = [
  '{',
  '  "source": "packages/catalog/snapshot-data/gcp-gpu.csv (SkyPilot catalog v7), TPU rows left out",',
  '  "machineOfferingColumns": ["machineType", "zone", "onDemandPrice", "spotPrice"],',
  '  "acceleratorOfferingColumns": ["acceleratorType", "count", "zone", "onDemandPrice", "spotPrice"],',
  '  "machineTypes": {',
  entries(machineTypes),
  '  },',
  '  "accelerators": {',
  entries(accelerators),
  '  },',
  '  "machineOfferings": [',
  machineOfferings.map((each) => `    ${JSON.stringify(each)}`).join(',\n'),
  '  ],',
  '  "acceleratorOfferings": [',
  acceleratorOfferings.map((each) => `    ${JSON.stringify(each)}`).join(',\n'),
  '  ]',
  '}',
];
writeFileSync(output, `${out.join('\n')}\n`);
console.log(
  `${Object.keys(machineTypes).length} machine types, ${machineOfferings.length} machine offerings, ${acceleratorOfferings.length} accelerator offerings → ${output.pathname}`,
);
