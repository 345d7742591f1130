export * from './agent-runtime-install.js';
export * from './container-entrypoint.js';
export { shellQuote } from './shell-quote.js';
export * from './vm-user-data.js';
export * from './gateway-user-data.js';
