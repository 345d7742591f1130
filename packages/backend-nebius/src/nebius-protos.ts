/**
 * Nebius's published API definitions (`assets/proto/nebius/…`, vendored from the nebius/api repository,
 * MIT) loaded for @grpc/grpc-js. protobufjs cannot parse the list values inside the aggregate
 * `(buf.validate.field) = {…}` options some fields carry (server-side validation rules), so each
 * such value is replaced by `true` as the files are read; messages, fields and services are
 * unchanged. `buf/validate/validate.proto` and `google/rpc/status.proto` are small stand-ins
 * (see "The vendored protos" in the package README).
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { fromJSON, type PackageDefinition } from '@grpc/proto-loader';
import protobuf from 'protobufjs';

/** The vendored protos: `assets/proto/` beside `src/` and `dist/` (published with `dist/`, as runtime data). */
export const NEBIUS_PROTO_DIRECTORY = fileURLToPath(new URL('../assets/proto/', import.meta.url));

/** The files whose services this package calls. */
export const NEBIUS_SERVICE_FILES = [
  'nebius/iam/v1/token_exchange_service.proto',
  'nebius/iam/v1/tenant_service.proto',
  'nebius/iam/v1/project_service.proto',
  'nebius/vpc/v1/subnet_service.proto',
  'nebius/compute/v1/instance_service.proto',
  'nebius/compute/v1/disk_service.proto',
  'nebius/compute/v1/gpu_cluster_service.proto',
  'nebius/compute/v1/platform_service.proto',
  'nebius/common/v1/operation_service.proto',
  'nebius/billing/v1alpha1/calculator_service.proto',
] as const;

/** Options as grpc-js's clients and servers want them: field names as in the protos. */
export const NEBIUS_PROTO_LOADER_OPTIONS = {
  keepCase: true,
  longs: Number,
  enums: String,
  defaults: true,
  oneofs: true,
} as const;

/** `(buf.validate.field) = {` … its matching `}`, skipping braces inside string literals. */
export function replaceAggregateValidateOptions(source: string): string {
  const marker = /\(buf\.validate\.[a-z_]+\)\s*=\s*\{/g;
  let result = '';
  let from = 0;
  for (let match = marker.exec(source); match !== null; match = marker.exec(source)) {
    let depth = 1;
    let index = match.index + match[0].length;
    while (depth > 0 && index < source.length) {
      const char = source[index];
      if (char === '"' || char === "'") {
        index += 1;
        while (index < source.length && source[index] !== char) index += source[index] === '\\' ? 2 : 1;
      } else if (char === '{') depth += 1;
      else if (char === '}') depth -= 1;
      index += 1;
    }
    result += `${source.slice(from, match.index)}${match[0].slice(0, -1)}true`;
    from = index;
    marker.lastIndex = index;
  }
  return result + source.slice(from);
}

/** Parses `files` and everything they import from `directory` (protobufjs's own well-known types first). */
export function loadNebiusProtoRoot(directory: string, files: readonly string[]): protobuf.Root {
  const root = new protobuf.Root();
  const loaded = new Set<string>();
  const visit = (file: string): void => {
    if (loaded.has(file)) return;
    loaded.add(file);
    if (file.startsWith('google/protobuf/')) {
      // protobufjs (and @grpc/proto-loader, imported above) register the well-known types.
      const json = (protobuf.common as unknown as Record<string, protobuf.INamespace | undefined>)[file];
      if (!json?.nested) throw new Error(`Nebius protos: no well-known type ${file}`);
      root.addJSON(json.nested);
      return;
    }
    const source = replaceAggregateValidateOptions(readFileSync(join(directory, file), 'utf8'));
    const parsed = protobuf.parse(source, root, { keepCase: true, alternateCommentMode: false });
    for (const imported of [...(parsed.imports ?? []), ...(parsed.weakImports ?? [])]) visit(imported);
  };
  for (const file of files) visit(file);
  root.resolveAll();
  return root;
}

/** The package definition of the services this package calls, for `grpc.loadPackageDefinition`. */
export function loadNebiusPackageDefinition(directory = NEBIUS_PROTO_DIRECTORY): PackageDefinition {
  const root = loadNebiusProtoRoot(directory, NEBIUS_SERVICE_FILES);
  return fromJSON(root.toJSON(), NEBIUS_PROTO_LOADER_OPTIONS);
}
