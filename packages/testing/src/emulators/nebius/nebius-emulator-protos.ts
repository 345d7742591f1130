/**
 * The Nebius protos the emulator serves: the same published definitions `@dstack/backend-nebius`
 * vendors (its `assets/proto/` directory, read from the workspace: this package is private), loaded the
 * same way: protobufjs cannot parse the list values of `(buf.validate.field) = {…}` options, so
 * each such aggregate is read as `true` (server-side validation rules the emulator does not apply).
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { fromJSON, type PackageDefinition } from '@grpc/proto-loader';
import protobuf from 'protobufjs';

/** `packages/backend-nebius/assets/proto`, from `src/emulators/nebius/` and `dist/emulators/nebius/` alike. */
export const NEBIUS_EMULATOR_PROTO_DIRECTORY = fileURLToPath(
  new URL('../../../../backend-nebius/assets/proto/', import.meta.url),
);

const SERVED_FILES = [
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
];

function withoutAggregateValidateOptions(source: string): string {
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

let loaded: PackageDefinition | undefined;

export function nebiusEmulatorPackageDefinition(): PackageDefinition {
  if (loaded) return loaded;
  const root = new protobuf.Root();
  const seen = new Set<string>();
  const visit = (file: string): void => {
    if (seen.has(file)) return;
    seen.add(file);
    if (file.startsWith('google/protobuf/')) {
      const json = (protobuf.common as unknown as Record<string, protobuf.INamespace | undefined>)[file];
      if (!json?.nested) throw new Error(`Nebius protos: no well-known type ${file}`);
      root.addJSON(json.nested);
      return;
    }
    const source = withoutAggregateValidateOptions(
      readFileSync(join(NEBIUS_EMULATOR_PROTO_DIRECTORY, file), 'utf8'),
    );
    const parsed = protobuf.parse(source, root, { keepCase: true });
    for (const imported of parsed.imports ?? []) visit(imported);
  };
  for (const file of SERVED_FILES) visit(file);
  root.resolveAll();
  loaded = fromJSON(root.toJSON(), {
    keepCase: true,
    longs: Number,
    enums: String,
    defaults: true,
    oneofs: true,
  });
  return loaded;
}
