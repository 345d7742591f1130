/**
 * protobufjs cannot parse the list values inside the aggregate `(buf.validate.field) = {…}` options
 * that published APIs (Nebius's among them) put on fields as server-side validation rules, so
 * each such value is read as `true`; messages, fields and services are unchanged.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fromJSON, type PackageDefinition } from '@grpc/proto-loader';
import protobuf from 'protobufjs';

/** Options as grpc-js's clients and servers want them: field names as in the protos. */
export const PROTO_LOADER_OPTIONS = {
  keepCase: true,
  longs: Number,
  enums: String,
  defaults: true,
  oneofs: true,
} as const;

/** Each `(buf.validate.…) = {` … its matching `}` read as `true`, skipping braces inside string literals. */
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

/**
 * Parses `files` (paths relative to `directory`) and everything they import from `directory`;
 * `google/protobuf/…` imports are protobufjs's own well-known types.
 */
export function loadProtoRoot(directory: string, files: readonly string[]): protobuf.Root {
  const root = new protobuf.Root();
  const loaded = new Set<string>();
  const visit = (file: string): void => {
    if (loaded.has(file)) return;
    loaded.add(file);
    if (file.startsWith('google/protobuf/')) {
      // protobufjs (and @grpc/proto-loader, imported above) register the well-known types.
      const json = (protobuf.common as unknown as Record<string, protobuf.INamespace | undefined>)[file];
      if (!json?.nested) throw new Error(`protos in ${directory}: no well-known type ${file}`);
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

/** The package definition of the services in `files`, for `grpc.loadPackageDefinition` or a grpc-js server. */
export function loadProtoPackageDefinition(directory: string, files: readonly string[]): PackageDefinition {
  return fromJSON(loadProtoRoot(directory, files).toJSON(), PROTO_LOADER_OPTIONS);
}
