import type { CatalogItem, QueryFilter } from '../catalog-item.js';
import {
  ARCH_CODES,
  type CatalogWarning,
  type DecodedCatalogRow,
  decodeCatalogCsv,
  VENDOR_CODES,
} from '../csv/catalog-row-decoder.js';
import { ACCELERATOR_VENDORS, CPU_ARCHITECTURES, getComputeCapability } from '../gpus/known-accelerators.js';
import { isComputeCapabilityBetween } from '../matching/matches.js';
import type { OrderedOffers } from '../selection.js';

export interface ColumnarCatalogCsvOptions {
  /** File name or URL, quoted in warnings. */
  source?: string;
  /** Called for each malformed row, which is skipped. Default: `console.warn`. */
  onWarning?: (warning: CatalogWarning) => void;
}

const NVIDIA_CODE = VENDOR_CODES.get('nvidia')!;
const EMPTY_JSON = '{}';
/**
 * What a row without flags or provider data gets: one frozen value shared by every such row.
 * Most rows have neither, and two fresh allocations per row were half the cost of a query
 * that returns tens of thousands of rows (gpuhunt shares its whole items). Changing them throws.
 */
const NO_FLAGS = Object.freeze([]) as unknown as string[];
const NO_PROVIDER_DATA = Object.freeze({}) as Record<string, unknown>;

/** Interned strings with their lowercase forms, for case-insensitive lookups by id. */
class StringTable {
  readonly values: string[] = [];
  readonly lower: string[] = [];
  private readonly ids = new Map<string, number>();

  intern(value: string): number {
    let id = this.ids.get(value);
    if (id === undefined) {
      id = this.values.length;
      const owned = detach(value);
      this.ids.set(owned, id);
      this.values.push(owned);
      this.lower.push(owned.toLowerCase());
    }
    return id;
  }
}

/**
 * V8 keeps substrings of 13+ characters as views into their parent string; an interned
 * value must not keep a whole catalog file alive.
 */
function detach(value: string): string {
  return value.length < 13 ? value : Buffer.from(value, 'utf8').toString('utf8');
}

/** The columns of a catalog and the typed array of each: the one place that lists them. */
const COLUMN_TYPES = {
  price: Float64Array,
  memory: Float64Array,
  /** NaN for none. */
  gpuMemory: Float64Array,
  /** NaN for none. */
  diskSize: Float64Array,
  cpu: Int32Array,
  gpuCount: Int32Array,
  instanceNameId: Int32Array,
  locationId: Int32Array,
  /** -1 for none. */
  gpuNameId: Int32Array,
  flagSetId: Int32Array,
  providerDataId: Int32Array,
  spot: Uint8Array,
  /** 0 for none, else index in ACCELERATOR_VENDORS + 1. */
  vendor: Uint8Array,
  /** Index in CPU_ARCHITECTURES. */
  arch: Uint8Array,
} as const;

type ColumnName = keyof typeof COLUMN_TYPES;
/** One typed array per column, of the type given by {@link COLUMN_TYPES}. */
type Columns = { [Name in ColumnName]: InstanceType<(typeof COLUMN_TYPES)[Name]> };
type ColumnArray = Columns[ColumnName];
type ColumnArrayType = new (length: number) => ColumnArray;

const COLUMN_NAMES = Object.keys(COLUMN_TYPES) as ColumnName[];

/** Zero-filled columns of `length` rows. */
function allocateColumns(length: number): Columns {
  const columns: Partial<Record<ColumnName, ColumnArray>> = {};
  for (const name of COLUMN_NAMES) columns[name] = new COLUMN_TYPES[name](length);
  return columns as Columns;
}

/**
 * New columns, each `map(array, type)` of the same column of `columns`; `map` must return
 * an array of the given `type` (a new one of it, or a slice of `array`).
 */
function mapColumns(
  columns: Columns,
  map: (array: ColumnArray, type: ColumnArrayType) => ColumnArray,
): Columns {
  const mapped: Partial<Record<ColumnName, ColumnArray>> = {};
  for (const name of COLUMN_NAMES) mapped[name] = map(columns[name], COLUMN_TYPES[name]);
  return mapped as Columns;
}

/** Rows appended in file order; `build()` sorts them by price. */
class ColumnarCatalogBuilder {
  size = 0;
  capacity: number;
  /** `capacity` rows, the first `size` of them filled; replaced when it grows. */
  columns: Columns;
  readonly instanceNames = new StringTable();
  readonly locations = new StringTable();
  readonly gpuNames = new StringTable();
  /** Flag sets by their space-joined text; id 0 is the empty set. */
  readonly flagSetIds = new Map<string, number>([['', 0]]);
  readonly flagSets: string[][] = [[]];
  /** Provider data JSON texts; id 0 is `{}`. */
  readonly providerDataIds = new Map<string, number>([[EMPTY_JSON, 0]]);
  readonly providerDataTexts: string[] = [EMPTY_JSON];

  constructor(
    readonly provider: string,
    capacity: number,
  ) {
    this.capacity = Math.max(16, capacity);
    this.columns = allocateColumns(this.capacity);
  }

  private reserve(): number {
    if (this.size === this.capacity) {
      const capacity = this.capacity * 2;
      this.columns = mapColumns(this.columns, (array, Type) => {
        const grown = new Type(capacity);
        grown.set(array);
        return grown;
      });
      this.capacity = capacity;
    }
    return this.size++;
  }

  private internFlags(text: string): number {
    let id = this.flagSetIds.get(text);
    if (id === undefined) {
      id = this.flagSets.length;
      this.flagSetIds.set(detach(text), id);
      this.flagSets.push(text.split(' '));
    }
    return id;
  }

  private internProviderData(text: string): number {
    let id = this.providerDataIds.get(text);
    if (id === undefined) {
      id = this.providerDataTexts.length;
      const owned = detach(text);
      this.providerDataIds.set(owned, id);
      this.providerDataTexts.push(owned);
    }
    return id;
  }

  addDecoded(row: DecodedCatalogRow): void {
    const index = this.reserve();
    const columns = this.columns;
    columns.price[index] = row.price;
    columns.memory[index] = row.memory;
    columns.gpuMemory[index] = row.gpuMemory;
    columns.diskSize[index] = row.diskSize;
    columns.cpu[index] = row.cpu;
    columns.gpuCount[index] = row.gpuCount;
    columns.instanceNameId[index] = this.instanceNames.intern(row.instanceName);
    columns.locationId[index] = this.locations.intern(row.location);
    columns.gpuNameId[index] = row.gpuName === null ? -1 : this.gpuNames.intern(row.gpuName);
    columns.flagSetId[index] = row.flagsText === '' ? 0 : this.internFlags(row.flagsText);
    columns.providerDataId[index] =
      row.providerDataText === EMPTY_JSON ? 0 : this.internProviderData(row.providerDataText);
    columns.spot[index] = row.spot ? 1 : 0;
    columns.vendor[index] = row.vendorCode;
    columns.arch[index] = row.archCode;
  }

  addItem(item: CatalogItem): void {
    for (const field of ['price', 'memory'] as const) {
      if (!Number.isFinite(item[field])) {
        throw new Error(
          `Catalog item ${item.instanceName}: ${field} must be a finite number, got ${item[field]}`,
        );
      }
    }
    for (const field of ['cpu', 'gpuCount'] as const) {
      if (!Number.isInteger(item[field]) || Math.abs(item[field]) > 0x7fffffff) {
        throw new Error(`Catalog item ${item.instanceName}: ${field} must be an integer, got ${item[field]}`);
      }
    }
    const index = this.reserve();
    const columns = this.columns;
    columns.price[index] = item.price;
    columns.memory[index] = item.memory;
    columns.gpuMemory[index] = item.gpuMemory ?? Number.NaN;
    columns.diskSize[index] = item.diskSize ?? Number.NaN;
    columns.cpu[index] = item.cpu;
    columns.gpuCount[index] = item.gpuCount;
    columns.instanceNameId[index] = this.instanceNames.intern(item.instanceName);
    columns.locationId[index] = this.locations.intern(item.location);
    columns.gpuNameId[index] = item.gpuName === null ? -1 : this.gpuNames.intern(item.gpuName);
    columns.flagSetId[index] = item.flags.length === 0 ? 0 : this.internFlags(item.flags.join(' '));
    const providerData = JSON.stringify(item.providerData ?? {});
    columns.providerDataId[index] = providerData === EMPTY_JSON ? 0 : this.internProviderData(providerData);
    columns.spot[index] = item.spot ? 1 : 0;
    columns.vendor[index] = item.gpuVendor === null ? 0 : (VENDOR_CODES.get(item.gpuVendor) ?? 0);
    columns.arch[index] = ARCH_CODES.get(item.cpuArch) ?? 0;
  }

  build(): ColumnarCatalog {
    const size = this.size;
    const price = this.columns.price;
    let sorted = true;
    for (let index = 1; index < size; index++) {
      if (price[index - 1]! > price[index]!) {
        sorted = false;
        break;
      }
    }
    let columns: Columns;
    if (sorted) {
      columns = mapColumns(this.columns, (array) => array.slice(0, size));
    } else {
      const order = stableOrderByPrice(price, size);
      columns = mapColumns(this.columns, (source, Type) => {
        const target = new Type(size);
        for (let index = 0; index < size; index++) target[index] = source[order[index]!]!;
        return target;
      });
    }
    return new ColumnarCatalog(this.provider, size, columns, {
      instanceNames: this.instanceNames,
      locations: this.locations,
      gpuNames: this.gpuNames,
      flagSets: this.flagSets,
      providerDataTexts: this.providerDataTexts,
    });
  }
}

interface Dictionaries {
  instanceNames: StringTable;
  locations: StringTable;
  gpuNames: StringTable;
  flagSets: string[][];
  providerDataTexts: string[];
}

/**
 * One provider's offers in memory, laid out for fast queries: rows sorted by price
 * (stable), numbers in typed arrays, strings interned. {@link query} gives the same rows
 * as `items.filter((item) => matches(item, filter))`, in price order, and builds
 * `CatalogItem` objects only for the rows that match.
 */
export class ColumnarCatalog {
  /** @internal use {@link fromItems} or {@link fromCsv}. */
  constructor(
    /** Provider of every row, lowercase. */
    readonly provider: string,
    /** Number of rows. */
    readonly size: number,
    private readonly columns: Columns,
    private readonly dictionaries: Dictionaries,
  ) {}

  /** Per provider data id: the parsed object when it is flat, null when it must be re-parsed. */
  private readonly parsedProviderData: (Record<string, unknown> | null | undefined)[] = [];

  /** Builds a catalog from items (their `provider` field is replaced by `provider`). */
  static fromItems(provider: string, items: Iterable<CatalogItem>): ColumnarCatalog {
    const builder = new ColumnarCatalogBuilder(
      provider.toLowerCase(),
      Array.isArray(items) ? items.length : 16,
    );
    for (const item of items) builder.addItem(item);
    return builder.build();
  }

  /**
   * Reads a catalog file (see `parseCatalogCsv` for the rules) straight into columns.
   * Malformed rows are skipped with a warning; throws when the text is not a catalog file.
   */
  static fromCsv(provider: string, text: string, options: ColumnarCatalogCsvOptions = {}): ColumnarCatalog {
    // About 70 characters per row in real catalogs; the builder grows when needed.
    const builder = new ColumnarCatalogBuilder(provider.toLowerCase(), Math.ceil(text.length / 64));
    decodeCatalogCsv(text, options, (row) => builder.addDecoded(row));
    return builder.build();
  }

  /** @internal price of a row, unchecked. */
  priceOf(index: number): number {
    return this.columns.price[index]!;
  }

  /** The row at `index` in price order. */
  at(index: number): CatalogItem {
    if (!Number.isInteger(index) || index < 0 || index >= this.size) {
      throw new RangeError(`Row ${index} is out of range 0..${this.size - 1}`);
    }
    return this.materialize(index);
  }

  /** All rows in price order. */
  toItems(): CatalogItem[] {
    const items = new Array<CatalogItem>(this.size);
    for (let index = 0; index < this.size; index++) items[index] = this.materialize(index);
    return items;
  }

  *[Symbol.iterator](): IterableIterator<CatalogItem> {
    for (let index = 0; index < this.size; index++) yield this.materialize(index);
  }

  /** Rows that match the filter (gpuhunt's `matches()`), in price order. */
  query(filter: QueryFilter): CatalogItem[] {
    const rows = this.select(filter);
    const items = new Array<CatalogItem>(rows.length);
    for (let index = 0; index < rows.length; index++) items[index] = rows.itemAt(index);
    return items;
  }

  /**
   * The rows {@link query} would return, as row numbers: nothing is built per row, so this
   * is the cost of a query whatever the number of matches.
   */
  select(filter: QueryFilter): ColumnarRows {
    if (filter.provider !== undefined) {
      const provider = this.provider;
      if (!filter.provider.some((name) => name.toLowerCase() === provider)) {
        return new ColumnarRows(this, new Int32Array(0));
      }
    }
    const {
      price,
      memory,
      gpuMemory,
      diskSize,
      cpu,
      gpuCount,
      gpuNameId,
      flagSetId,
      spot: spotColumn,
      vendor,
      arch,
    } = this.columns;
    const minCpu = filter.minCpu ?? Number.NEGATIVE_INFINITY;
    const maxCpu = filter.maxCpu ?? Number.POSITIVE_INFINITY;
    const minMemory = filter.minMemory ?? Number.NEGATIVE_INFINITY;
    const maxMemory = filter.maxMemory ?? Number.POSITIVE_INFINITY;
    const minGpuCount = filter.minGpuCount ?? Number.NEGATIVE_INFINITY;
    const maxGpuCount = filter.maxGpuCount ?? Number.POSITIVE_INFINITY;
    const minGpuMemory = filter.minGpuMemory ?? Number.NEGATIVE_INFINITY;
    const maxGpuMemory = filter.maxGpuMemory ?? Number.POSITIVE_INFINITY;
    const minTotal = filter.minTotalGpuMemory ?? Number.NEGATIVE_INFINITY;
    const maxTotal = filter.maxTotalGpuMemory ?? Number.POSITIVE_INFINITY;
    const minDisk = filter.minDiskSize ?? Number.NEGATIVE_INFINITY;
    const maxDisk = filter.maxDiskSize ?? Number.POSITIVE_INFINITY;
    const spot = filter.spot === undefined ? -1 : filter.spot ? 1 : 0;
    const cpuArch = filter.cpuArch ? (ARCH_CODES.get(filter.cpuArch) ?? 255) : -1;
    const gpuVendor = filter.gpuVendor ? (VENDOR_CODES.get(filter.gpuVendor) ?? 255) : -1;
    const skipGpuChecksWhenNoGpu = filter.minGpuCount === 0;
    const gpuNameAllowed = this.gpuNameTable(filter);
    const requireNvidia =
      filter.minComputeCapability !== undefined || filter.maxComputeCapability !== undefined;
    const flagSetAllowed = this.flagSetTable(filter);

    // Price bounds by binary search over the sorted column.
    const start = filter.minPrice === undefined ? 0 : lowerBound(price, filter.minPrice, this.size);
    const end = filter.maxPrice === undefined ? this.size : upperBound(price, filter.maxPrice, this.size);

    const rows = new Int32Array(Math.max(0, end - start));
    let matched = 0;
    for (let index = start; index < end; index++) {
      if (spot >= 0 && spotColumn[index] !== spot) continue;
      if (cpuArch >= 0 && arch[index] !== cpuArch) continue;
      const cpuValue = cpu[index]!;
      if (cpuValue < minCpu || cpuValue > maxCpu) continue;
      const memoryValue = memory[index]!;
      if (memoryValue < minMemory || memoryValue > maxMemory) continue;
      const count = gpuCount[index]!;
      if (!(skipGpuChecksWhenNoGpu && count === 0)) {
        if (gpuVendor >= 0 && vendor[index] !== gpuVendor) continue;
        if (count < minGpuCount || count > maxGpuCount) continue;
        if (gpuNameAllowed !== null) {
          const nameId = gpuNameId[index]!;
          if (nameId < 0 || gpuNameAllowed[nameId] === 0) continue;
          if (requireNvidia && vendor[index] !== NVIDIA_CODE) continue;
        }
        let perGpu = count > 0 ? gpuMemory[index]! : 0;
        if (Number.isNaN(perGpu)) perGpu = 0;
        if (perGpu < minGpuMemory || perGpu > maxGpuMemory) continue;
        const total = count * perGpu;
        if (total < minTotal || total > maxTotal) continue;
      }
      const disk = diskSize[index]!;
      if (!Number.isNaN(disk) && (disk < minDisk || disk > maxDisk)) continue;
      if (flagSetAllowed !== null && flagSetAllowed[flagSetId[index]!] === 0) continue;
      rows[matched++] = index;
    }
    return new ColumnarRows(this, rows.subarray(0, matched));
  }

  /**
   * Per interned GPU name: 1 when the name passes both the name filter and the compute
   * capability bounds; null when the filter constrains neither.
   */
  private gpuNameTable(filter: QueryFilter): Uint8Array | null {
    const byName = filter.gpuName !== undefined;
    const byCapability =
      filter.minComputeCapability !== undefined || filter.maxComputeCapability !== undefined;
    if (!byName && !byCapability) return null;
    const { values, lower } = this.dictionaries.gpuNames;
    const wanted = byName ? new Set(filter.gpuName!.map((name) => name.toLowerCase())) : null;
    const table = new Uint8Array(values.length);
    for (let id = 0; id < values.length; id++) {
      if (wanted !== null && !wanted.has(lower[id]!)) continue;
      if (byCapability) {
        const name = values[id]!;
        const capability = name === '' ? undefined : getComputeCapability(name);
        if (!capability || !isComputeCapabilityBetween(capability, filter)) continue;
      }
      table[id] = 1;
    }
    return table;
  }

  /** Per interned flag set: 1 when every flag is allowed; null when all flags are allowed. */
  private flagSetTable(filter: QueryFilter): Uint8Array | null {
    if (filter.allowedFlags === undefined) return null;
    const allowed = new Set(filter.allowedFlags);
    const { flagSets } = this.dictionaries;
    const table = new Uint8Array(flagSets.length);
    for (let id = 0; id < flagSets.length; id++) {
      table[id] = flagSets[id]!.every((flag) => allowed.has(flag)) ? 1 : 0;
    }
    return table;
  }

  /** @internal the row at `index`, unchecked. */
  materialize(index: number): CatalogItem {
    const columns = this.columns;
    const dictionaries = this.dictionaries;
    const gpuNameId = columns.gpuNameId[index]!;
    const gpuMemory = columns.gpuMemory[index]!;
    const diskSize = columns.diskSize[index]!;
    const vendor = columns.vendor[index]!;
    const providerDataId = columns.providerDataId[index]!;
    const flagSetId = columns.flagSetId[index]!;
    return {
      provider: this.provider,
      instanceName: dictionaries.instanceNames.values[columns.instanceNameId[index]!]!,
      location: dictionaries.locations.values[columns.locationId[index]!]!,
      price: columns.price[index]!,
      cpu: columns.cpu[index]!,
      memory: columns.memory[index]!,
      gpuCount: columns.gpuCount[index]!,
      gpuName: gpuNameId < 0 ? null : dictionaries.gpuNames.values[gpuNameId]!,
      gpuMemory: Number.isNaN(gpuMemory) ? null : gpuMemory,
      spot: columns.spot[index] === 1,
      diskSize: Number.isNaN(diskSize) ? null : diskSize,
      gpuVendor: vendor === 0 ? null : ACCELERATOR_VENDORS[vendor - 1]!,
      flags: flagSetId === 0 ? NO_FLAGS : dictionaries.flagSets[flagSetId]!.slice(),
      cpuArch: CPU_ARCHITECTURES[columns.arch[index]!]!,
      providerData: providerDataId === 0 ? NO_PROVIDER_DATA : this.providerData(providerDataId),
    };
  }

  /** Parsed provider data, cached per id: flat objects are copied shallowly, others re-parsed. */
  private providerData(id: number): Record<string, unknown> {
    let parsed = this.parsedProviderData[id];
    if (parsed === undefined) {
      const value = JSON.parse(this.dictionaries.providerDataTexts[id]!) as Record<string, unknown>;
      const flat = Object.values(value).every((entry) => entry === null || typeof entry !== 'object');
      parsed = flat ? value : null;
      this.parsedProviderData[id] = parsed;
    }
    return parsed === null ? JSON.parse(this.dictionaries.providerDataTexts[id]!) : { ...parsed };
  }
}

/** Rows of one {@link ColumnarCatalog} selected by a query, in price order. */
export class ColumnarRows implements OrderedOffers {
  constructor(
    private readonly catalog: ColumnarCatalog,
    /** Row numbers in the catalog, ascending. */
    readonly rows: Int32Array,
  ) {}

  get length(): number {
    return this.rows.length;
  }

  priceAt(index: number): number {
    return this.catalog.priceOf(this.rows[index]!);
  }

  itemAt(index: number): CatalogItem {
    return this.catalog.materialize(this.rows[index]!);
  }
}

/**
 * Row indices in ascending price order, equal prices in input order (like Python's
 * sorted()). A counting sort over the distinct prices: the engine's native numeric sort
 * finds them, which is several times faster than sorting indices with a comparator.
 */
function stableOrderByPrice(price: Float64Array, size: number): Uint32Array {
  const sortedPrices = price.slice(0, size).sort();
  const nextSlot = new Map<number, number>();
  for (let index = 0; index < size; index++) {
    const value = sortedPrices[index]!;
    if (index === 0 || sortedPrices[index - 1] !== value) nextSlot.set(value, index);
  }
  const order = new Uint32Array(size);
  for (let index = 0; index < size; index++) {
    const value = price[index]!;
    const slot = nextSlot.get(value)!;
    order[slot] = index;
    nextSlot.set(value, slot + 1);
  }
  return order;
}

/** First index whose value is >= `bound`. */
function lowerBound(values: Float64Array, bound: number, size: number): number {
  let low = 0;
  let high = size;
  while (low < high) {
    const middle = (low + high) >>> 1;
    if (values[middle]! < bound) low = middle + 1;
    else high = middle;
  }
  return low;
}

/** First index whose value is > `bound`. */
function upperBound(values: Float64Array, bound: number, size: number): number {
  let low = 0;
  let high = size;
  while (low < high) {
    const middle = (low + high) >>> 1;
    if (values[middle]! <= bound) low = middle + 1;
    else high = middle;
  }
  return low;
}
