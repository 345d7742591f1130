/** A real ACME server for gateway tests: pebble and its mock DNS. */
export { type PebbleOptions, type PebbleServer, pebbleMissing, startPebble } from './pebble-server.js';
