export type { CatalogItem, QueryFilter } from './catalog-item.js';
export * from './gpus/known-accelerators.js';
