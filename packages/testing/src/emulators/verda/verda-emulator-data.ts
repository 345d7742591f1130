/**
 * What the Verda emulator's account sees: Verda's instance types as `GET /v1/instance-types`
 * describes them (the GPU descriptions gpuhunt names GPUs from, prices as strings, on-demand and
 * spot; the prices are Verda's public list prices) and its locations. The bundled catalog
 * snapshot's `verda.csv` is what gpuhunt's collector makes of exactly these (checked by a test).
 */

export interface VerdaInstanceTypeSpec {
  readonly id: string;
  readonly instance_type: string;
  readonly price_per_hour: string;
  readonly spot_price: string;
  readonly description: string;
  readonly cpu: { readonly description: string; readonly number_of_cores: number };
  readonly gpu: { readonly description: string; readonly number_of_gpus: number };
  readonly memory: { readonly description: string; readonly size_in_gigabytes: number };
  readonly gpu_memory: { readonly description: string; readonly size_in_gigabytes: number };
  readonly storage: { readonly description: string };
}

function type(
  name: string,
  [price, spot]: [string, string],
  [cores, memoryGb]: [number, number],
  gpus?: { count: number; description: string; memoryGb: number },
): VerdaInstanceTypeSpec {
  return {
    id: `emulated-${name.toLowerCase().replaceAll('.', '-')}`,
    instance_type: name,
    price_per_hour: price,
    spot_price: spot,
    description: gpus ? `Dedicated Hardware Instance ${gpus.description}` : 'Dedicated CPU Instance',
    cpu: { description: `${cores} CPU`, number_of_cores: cores },
    gpu: { description: gpus?.description ?? '', number_of_gpus: gpus?.count ?? 0 },
    memory: { description: `${memoryGb}GB RAM`, size_in_gigabytes: memoryGb },
    gpu_memory: {
      description: gpus ? `${gpus.memoryGb}GB GPU RAM` : '',
      size_in_gigabytes: gpus?.memoryGb ?? 0,
    },
    storage: { description: 'dynamic' },
  };
}

export const DEFAULT_VERDA_INSTANCE_TYPES: readonly VerdaInstanceTypeSpec[] = [
  type('CPU.4V.16G', ['0.0350', '0.0120'], [4, 16]),
  type('1V100.6V', ['0.3900', '0.1400'], [6, 23], {
    count: 1,
    description: '1x Tesla V100 16GB',
    memoryGb: 16,
  }),
  type('1A6000.10V', ['0.4900', '0.1700'], [10, 60], {
    count: 1,
    description: '1x RTX A6000 48GB',
    memoryGb: 48,
  }),
  type('1L40S.20V', ['0.9100', '0.3200'], [20, 60], { count: 1, description: '1x L40S 48GB', memoryGb: 48 }),
  type('1A100.22V', ['1.2900', '0.4500'], [22, 120], {
    count: 1,
    description: '1x A100 SXM4 80GB',
    memoryGb: 80,
  }),
  type('1H100.80S.30V', ['2.1900', '0.8900'], [30, 120], {
    count: 1,
    description: '1x H100 SXM5 80GB',
    memoryGb: 80,
  }),
  type('8H100.80S.176V', ['17.5200', '7.1200'], [176, 1480], {
    count: 8,
    description: '8x H100 SXM5 80GB',
    memoryGb: 640,
  }),
  type('1RX7900XTX.8V', ['0.4000', '0.1500'], [8, 48], {
    count: 1,
    description: '1x AMD 7900XTX',
    memoryGb: 24,
  }),
];

export const DEFAULT_VERDA_LOCATIONS: readonly { code: string; name: string; country_code: string }[] = [
  { code: 'FIN-01', name: 'Finland 1', country_code: 'FI' },
  { code: 'FIN-02', name: 'Finland 2', country_code: 'FI' },
  { code: 'ICE-01', name: 'Iceland 1', country_code: 'IS' },
];
