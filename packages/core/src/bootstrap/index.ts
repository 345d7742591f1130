export * from './agent-runtime-install.js';
export * from './container-entrypoint.js';
export * from './gateway-user-data.js';
export { shellQuote } from './shell-quote.js';
export * from './vm-user-data.js';
