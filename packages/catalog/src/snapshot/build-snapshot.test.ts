import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import {
  buildSnapshot,
  readSnapshotSources,
  readSourceDate,
  renderSnapshotFiles,
  snapshotVersion,
} from './build-snapshot.js';

const packageDirectory = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
const assetsDirectory = path.join(packageDirectory, 'assets/snapshot');
const dataDirectory = path.join(packageDirectory, 'snapshot-data');

describe('snapshotVersion', () => {
  it('is YYYYMMDD-<8 hex> and depends only on the date and the content', () => {
    const version = snapshotVersion('2026-11-21', { 'aws.csv': 'a', 'gcp.csv': 'b' });
    expect(version).toMatch(/^20261121-[0-9a-f]{8}$/);
    expect(snapshotVersion('2026-11-21', { 'gcp.csv': 'b', 'aws.csv': 'a' })).toBe(version);
    expect(snapshotVersion('2026-11-21', { 'aws.csv': 'a', 'gcp.csv': 'c' })).not.toBe(version);
    expect(() => snapshotVersion('21.11.2026', {})).toThrow(/YYYY-MM-DD/);
  });

  it('reads the date from the catalog-data README', () => {
    expect(readSourceDate('- License: Apache-2.0\n- Date read: 2026-11-21\n')).toBe('2026-11-21');
    expect(() => readSourceDate('no date')).toThrow();
  });
});

describe('bundled snapshot', () => {
  it('equals a fresh conversion of snapshot-data (run build:snapshot if not)', async () => {
    const sources = await readSnapshotSources(dataDirectory);
    const fresh = renderSnapshotFiles(buildSnapshot(sources), sources.date);
    for (const [name, text] of Object.entries(fresh)) {
      expect(await readFile(path.join(assetsDirectory, name), 'utf8'), name).toBe(text);
    }
  });

  it('is reproducible: two conversions give identical bytes', async () => {
    const sources = await readSnapshotSources(dataDirectory);
    const first = renderSnapshotFiles(buildSnapshot(sources), sources.date);
    const second = renderSnapshotFiles(buildSnapshot(sources), sources.date);
    expect(second).toEqual(first);
  });

  it('has a version dated 2026-11-21', async () => {
    expect((await readFile(path.join(assetsDirectory, 'version'), 'utf8')).trim()).toMatch(
      /^20261121-[0-9a-f]{8}$/,
    );
  });
});
