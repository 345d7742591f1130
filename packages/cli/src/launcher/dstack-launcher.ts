#!/usr/bin/env node
/**
 * The `dstack` bin of the published package (scripts/bundle.mjs bundles this file as CommonJS into
 * dist/bundle/bin/dstack.js): runs the CLI's bundle (dist/bundle/lib/dstack-cli.js) through V8's
 * code cache, and writes the cache once the command is done (never before its output).
 */
import { join } from 'node:path';
import { cachesCommandCode, codeCacheFile } from './cache-location.js';
import { runScriptBundle } from './code-cache.js';

/** The content hash of dist/bundle/lib/dstack-cli.js, set by scripts/bundle.mjs. */
declare const __DSTACK_CLI_BUNDLE_HASH__: string;

const bundle = runScriptBundle<{ main(argv: readonly string[]): Promise<number> }>({
  // This file is only ever run as the CommonJS bundle, which has `__dirname`.
  file: join(__dirname, '..', 'lib', 'dstack-cli.js'),
  cacheFile: codeCacheFile(process.argv, __DSTACK_CLI_BUNDLE_HASH__),
  importModule: (specifier) => import(specifier),
});

bundle.exports.main(process.argv).then((code) => {
  process.exitCode = code;
  if (code === 0 && cachesCommandCode(process.argv)) bundle.saveCache();
});
