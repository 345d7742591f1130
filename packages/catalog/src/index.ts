export {
  BACKEND_PACKAGES,
  type BackendCatalogKind,
  catalogProviderName,
  KNOWN_BACKENDS,
  type KnownBackend,
  OFFLINE_CATALOG_PACKAGES,
} from './backends/known-backends.js';
export {
  BUNDLED_SNAPSHOT_DIRECTORY,
  bundledSource,
  Catalog,
  type CatalogOptions,
  type CatalogProvider,
  type CatalogProviderStatus,
  CatalogSelection,
  type CatalogSource,
  type CatalogSourceFile,
  type CatalogSourceLoadOptions,
  type CollectOptions,
  cacheDirectorySource,
  cachingSource,
  DEFAULT_REFRESH_INTERVAL_MS,
  directorySource,
  firstAvailableSource,
  GPUHUNT_CATALOG_URL,
  GPUHUNT_OFFLINE_PROVIDERS,
  mergeByPrice,
  type OfflineCatalogProvider,
  type OnlineCatalogProvider,
  type OrderedOffers,
  orderedOffersOf,
  snapshotSource,
  type UrlSourceOptions,
  urlSource,
} from './catalog.js';
export {
  type CatalogItem,
  type CatalogItemInit,
  createCatalogItem,
  type QueryFilter,
} from './catalog-item.js';
export {
  CATALOG_CSV_COLUMNS,
  type CatalogCsvColumn,
  type CatalogWarning,
  formatCatalogCsv,
  formatCatalogCsvRow,
  logCatalogWarning,
  type ParseCatalogCsvOptions,
  parseCatalogCsv,
  quoteCsvField,
} from './csv/catalog-csv.js';
export { formatPythonFloat, pythonJsonDumps } from './csv/python-format.js';
export { defaultCatalog, setDefaultCatalog } from './default-catalog.js';
export { CatalogError } from './errors.js';
export * from './gpus/known-accelerators.js';
export {
  checkCatalogIntegrity,
  checkOfferRules,
  checkPriceScaling,
  findSpotAboveOnDemand,
  type IntegrityExpectations,
  type IntegrityProblem,
  type PriceScalingExpectation,
  type SpotAboveOnDemand,
} from './integrity/check-catalog-integrity.js';
export { AWS_GPUHUNT_EXPECTATIONS, GCP_GPUHUNT_EXPECTATIONS } from './integrity/gpuhunt-expectations.js';
export { AWS_SNAPSHOT_EXPECTATIONS, GCP_SNAPSHOT_EXPECTATIONS } from './integrity/snapshot-expectations.js';
export {
  compareComputeCapability,
  isComputeCapabilityBetween,
  matches,
  normalizeQueryFilter,
  parseComputeCapability,
  type QueryFilterInput,
} from './matching/matches.js';
export {
  AWS_PUBLISHED_PREFIXES,
  filterAwsOffers,
  filterGcpOffers,
  GCP_DROPPED_GPUS,
  GCP_PUBLISHED_PREFIXES,
} from './providers/gpuhunt-filters.js';
export { pythonRound } from './providers/python-round.js';
export {
  catalogVersion,
  type PublishCatalogOptions,
  type PublishedCatalog,
  publishCatalog,
} from './publish/publish-catalog.js';
export { ColumnarCatalog, type ColumnarCatalogCsvOptions, ColumnarRows } from './store/columnar-catalog.js';
