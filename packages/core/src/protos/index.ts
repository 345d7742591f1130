/**
 * Loading a provider's published `.proto` definitions for @grpc/grpc-js, for backends that speak
 * gRPC and for their emulators alike (each passes its own proto directory and entry files). A
 * separate entry of core, `@dstack/core/protos`: it needs protobufjs and @grpc/proto-loader
 * (optional peers of core, dependencies of the packages that import this), which nothing else
 * of core loads.
 */
export * from './proto-package-definition.js';
