export * from './vm-user-data.js';
