/**
 * What the emulated OCI tenancy offers: its regions with their availability domains, its shapes,
 * and the public Cost Estimator documents (`shapes.json`, `products.json`, as
 * `https://www.oracle.com/a/ocom/docs/cloudestimator2/data/` serves them) that price those shapes.
 * Prices are OCI's list prices (per OCPU or per GPU hour, memory per GB hour).
 */

export interface OciRegion {
  /** e.g. `us-ashburn-1`. */
  readonly name: string;
  /** The region key, e.g. `IAD` (OCIDs carry it in lower case). */
  readonly key: string;
  /** The availability domains' names, e.g. `Uocm:US-ASHBURN-AD-1`. */
  readonly availabilityDomains: readonly string[];
}

export interface OciShape {
  readonly name: string;
  readonly ocpus: number;
  readonly memoryGb: number;
  readonly gpuCount: number;
  /** The Cost Estimator's total GPU memory of the shape (GB). */
  readonly gpuMemoryGb: number;
  /** The GPU as OCI describes it (`shape.gpuDescription`). */
  readonly gpuDescription: string | null;
  readonly processor: 'intel' | 'amd' | 'arm';
  readonly shapeType: 'vm' | 'bm';
  readonly subType: 'standard' | 'gpu' | 'optimized';
  readonly allowPreemptible: boolean;
  /** Flexible shapes are priced per OCPU and per memory GB; fixed ones bundle their memory. */
  readonly flexible: boolean;
  /** The Cost Estimator hides it. */
  readonly hidden?: boolean;
  /** USD per hour: per GPU for GPU shapes, else per OCPU. */
  readonly unitPrice: number;
}

export const DEFAULT_OCI_REGIONS: readonly OciRegion[] = [
  { name: 'us-ashburn-1', key: 'IAD', availabilityDomains: ['Uocm:US-ASHBURN-AD-1', 'Uocm:US-ASHBURN-AD-2'] },
  { name: 'eu-frankfurt-1', key: 'FRA', availabilityDomains: ['Uocm:EU-FRANKFURT-1-AD-1'] },
];

const shape = (
  fields: Partial<OciShape> & Pick<OciShape, 'name' | 'ocpus' | 'memoryGb' | 'unitPrice'>,
): OciShape => ({
  gpuCount: 0,
  gpuMemoryGb: 0,
  gpuDescription: null,
  processor: 'intel',
  shapeType: fields.name.startsWith('BM.') ? 'bm' : 'vm',
  subType: 'standard',
  allowPreemptible: true,
  flexible: false,
  ...fields,
});

export const DEFAULT_OCI_SHAPES: readonly OciShape[] = [
  shape({ name: 'VM.Standard2.4', ocpus: 4, memoryGb: 60, unitPrice: 0.0638 }),
  shape({
    name: 'VM.Standard.E4.Flex',
    ocpus: 1,
    memoryGb: 16,
    processor: 'amd',
    flexible: true,
    unitPrice: 0.025,
  }),
  shape({ name: 'BM.Standard.A1.160', ocpus: 160, memoryGb: 1024, processor: 'arm', unitPrice: 0.01 }),
  // The Cost Estimator says the A10 and A100 shapes are ARM; they are not (gpuhunt corrects it).
  shape({
    name: 'VM.GPU.A10.1',
    ocpus: 15,
    memoryGb: 240,
    gpuCount: 1,
    gpuMemoryGb: 24,
    gpuDescription: 'NVIDIA A10',
    processor: 'arm',
    subType: 'gpu',
    allowPreemptible: false,
    unitPrice: 2,
  }),
  shape({
    name: 'VM.GPU.A10.2',
    ocpus: 30,
    memoryGb: 480,
    gpuCount: 2,
    gpuMemoryGb: 48,
    gpuDescription: 'NVIDIA A10',
    processor: 'arm',
    subType: 'gpu',
    allowPreemptible: false,
    unitPrice: 2,
  }),
  shape({
    name: 'VM.GPU3.1',
    ocpus: 6,
    memoryGb: 90,
    gpuCount: 1,
    gpuMemoryGb: 16,
    gpuDescription: 'NVIDIA Tesla V100',
    subType: 'gpu',
    unitPrice: 2.95,
  }),
  // Older than dstack's supported families: collected, never offered.
  shape({
    name: 'VM.GPU2.1',
    ocpus: 12,
    memoryGb: 72,
    gpuCount: 1,
    gpuMemoryGb: 16,
    gpuDescription: 'NVIDIA Tesla P100',
    subType: 'gpu',
    unitPrice: 1.275,
  }),
  shape({
    name: 'BM.GPU4.8',
    ocpus: 64,
    memoryGb: 2048,
    gpuCount: 8,
    gpuMemoryGb: 320,
    gpuDescription: 'NVIDIA A100',
    processor: 'arm',
    subType: 'gpu',
    allowPreemptible: false,
    unitPrice: 3.05,
  }),
  shape({ name: 'VM.Standard1.2', ocpus: 2, memoryGb: 14, hidden: true, unitPrice: 0.0638 }),
];

/** The Cost Estimator's part number of a shape's OCPU (or GPU) product. */
function ocpuPart(index: number): string {
  return `B9${String(1000 + index)}`;
}

/** Memory of the flexible shapes, one product per processor. */
const MEMORY_PART = 'B93114';
const MEMORY_PRICE_PER_GB = 0.0015;

const product = (partNumber: string, price: number) => ({
  partNumber,
  billingModel: 'UCM',
  pricetype: 'HOUR',
  currencyCodeLocalizations: [
    {
      currencyCode: 'EUR',
      prices: [{ model: 'PAY_AS_YOU_GO', value: Math.round(price * 0.92 * 10_000) / 10_000 }],
    },
    { currencyCode: 'USD', prices: [{ model: 'PAY_AS_YOU_GO', value: price }] },
  ],
});

export class OciEmulatorData {
  readonly regions: readonly OciRegion[];
  readonly shapes: readonly OciShape[];

  constructor(
    shapes: readonly OciShape[] = DEFAULT_OCI_SHAPES,
    regions: readonly OciRegion[] = DEFAULT_OCI_REGIONS,
  ) {
    this.shapes = shapes;
    this.regions = regions;
  }

  region(name: string): OciRegion | undefined {
    return this.regions.find((region) => region.name === name);
  }

  shape(name: string): OciShape | undefined {
    return this.shapes.find((each) => each.name === name);
  }

  /** The Cost Estimator's `shapes.json`. */
  costEstimatorShapes(): unknown {
    return {
      items: this.shapes.map((each, index) => ({
        name: each.name,
        hidden: each.hidden ?? false,
        status: 'ACTIVE',
        allowPreemptible: each.allowPreemptible,
        ...(each.flexible ? {} : { bundleMemoryQty: each.memoryGb }),
        ...(each.gpuCount > 0 ? { gpuQty: each.gpuCount, gpuMemoryQty: each.gpuMemoryGb } : {}),
        processorType: { value: each.processor },
        shapeType: { value: each.shapeType },
        subType: { value: each.subType },
        products: [
          { type: { value: 'ocpu' }, partNumber: ocpuPart(index), qty: each.ocpus },
          ...(each.flexible
            ? [{ type: { value: 'memory' }, partNumber: MEMORY_PART, qty: each.memoryGb }]
            : []),
        ],
      })),
    };
  }

  /** The Cost Estimator's `products.json`. */
  costEstimatorProducts(): unknown {
    return {
      items: [
        ...this.shapes.map((each, index) => product(ocpuPart(index), each.unitPrice)),
        product(MEMORY_PART, MEMORY_PRICE_PER_GB),
      ],
    };
  }
}
