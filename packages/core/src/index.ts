export * from './backend/index.js';
export * from './bootstrap/index.js';
export * from './configuration/index.js';
export * from './errors.js';
export * from './models/index.js';
export * from './providers/index.js';
export * from './ssh/index.js';
export { VERSION as CORE_VERSION } from './version.js';
