import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { loadProtoPackageDefinition, replaceAggregateValidateOptions } from './proto-package-definition.js';

let directory: string | undefined;
afterEach(() => {
  if (directory) rmSync(directory, { recursive: true, force: true });
  directory = undefined;
});

describe('published protos', () => {
  it('read each (buf.validate.…) = {…} option as true, braces inside its strings included', () => {
    const source = `string hostname = 20 [(buf.validate.field) = {
    cel: [{ id: "x" expression: "this.matches('^[a-z]{0,61}$')" }]
  }];
  string id = 1 [(buf.validate.field).required = true];`;
    expect(replaceAggregateValidateOptions(source)).toBe(
      'string hostname = 20 [(buf.validate.field) = true];\n  string id = 1 [(buf.validate.field).required = true];',
    );
  });

  it("load a service with what it imports from the directory and protobuf's well-known types", () => {
    directory = mkdtempSync(join(tmpdir(), 'dstack-protos-'));
    writeFileSync(
      join(directory, 'thing.proto'),
      'syntax = "proto3";\npackage example.v1;\nimport "google/protobuf/timestamp.proto";\n' +
        'message Thing { string name = 1 [(buf.validate.field) = { cel: [{ id: "n" }] }]; google.protobuf.Timestamp at = 2; }\n',
    );
    writeFileSync(
      join(directory, 'thing_service.proto'),
      'syntax = "proto3";\npackage example.v1;\nimport "thing.proto";\n' +
        'message GetThingRequest { string name = 1; }\nservice ThingService { rpc Get(GetThingRequest) returns (Thing); }\n',
    );
    const definition = loadProtoPackageDefinition(directory, ['thing_service.proto']);
    const service = definition['example.v1.ThingService'] as Record<string, { path: string }>;
    expect(service.Get?.path).toBe('/example.v1.ThingService/Get');
    expect(Object.keys(definition)).toEqual(
      expect.arrayContaining(['example.v1.Thing', 'google.protobuf.Timestamp']),
    );
  });
});
