export * from './capabilities.js';
export * from './compute.js';
export * from './config-models.js';
export * from './configurator.js';
export * from './consts.js';
export * from './names.js';
export * from './plugin.js';
export * from './run-job-with-create-instance.js';
