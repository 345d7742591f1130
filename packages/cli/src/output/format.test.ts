import { resourcesSpecSchema } from '@dstack/core';
import { describe, expect, it } from 'vitest';
import {
  formatDuration,
  formatGpus,
  formatPrice,
  formatRelativeTime,
  formatResources,
  formatResourcesSpec,
} from './format.js';

const NOW = new Date('2024-05-10T12:00:00.000Z');
const ago = (seconds: number) => new Date(NOW.getTime() - seconds * 1000);

describe('formatRelativeTime', () => {
  it.each([
    [0, 'now'],
    [9, 'now'],
    [10, '10 secs ago'],
    [59, '59 secs ago'],
    [60, '1 min ago'],
    [125, '2 mins ago'],
    [3599, '59 mins ago'],
    [3600, '1 hour ago'],
    [5 * 3600, '5 hours ago'],
    [30 * 3600, 'yesterday'],
    [3 * 86_400, '3 days ago'],
    [7 * 86_400, '1 week ago'],
    [20 * 86_400, '2 weeks ago'],
    [60 * 86_400, '2024-03-11'],
  ])('%i seconds ago reads %s', (seconds, expected) => {
    expect(formatRelativeTime(ago(seconds), NOW)).toBe(expected);
  });

  it('accepts ISO strings, reads the future as now and an invalid date as -', () => {
    expect(formatRelativeTime('2024-05-10T11:58:00.000Z', NOW)).toBe('2 mins ago');
    expect(formatRelativeTime(ago(-60), NOW)).toBe('now');
    expect(formatRelativeTime('not a date', NOW)).toBe('-');
  });
});

describe('value formatting', () => {
  it('formats prices and durations', () => {
    expect(formatPrice(0)).toBe('$0');
    expect(formatPrice(0.16243)).toBe('$0.1624');
    expect(formatPrice(undefined)).toBe('-');
    expect(formatDuration(300)).toBe('5m');
    expect(formatDuration(5400)).toBe('1h30m');
    expect(formatDuration(2 * 86_400)).toBe('2d');
    expect(formatDuration('off')).toBe('off');
    expect(formatDuration(undefined)).toBe('-');
  });

  it('formats instance resources and GPUs', () => {
    const resources = {
      cpus: 8,
      memory_mib: 61_440,
      gpus: [
        { name: 'A100', memory_mib: 81_920, vendor: 'nvidia' as const },
        { name: 'A100', memory_mib: 81_920, vendor: 'nvidia' as const },
      ],
      spot: true,
      disk: { size_mib: 102_400 },
    };
    expect(formatResources(resources)).toBe('8xCPU, 60GB, 2xA100 (80GB), 100GB (disk), SPOT');
    expect(formatGpus(resources.gpus)).toBe('A100:80GB:2');
    expect(formatGpus([])).toBe('-');
  });

  it('formats a requirement the way it is written', () => {
    expect(formatResourcesSpec(resourcesSpecSchema.parse({}))).toBe('cpu=2.. mem=8GB.. disk=100GB..');
    expect(
      formatResourcesSpec(resourcesSpecSchema.parse({ cpu: 'arm:4..8', gpu: 'H100,H200:8', memory: '64GB' })),
    ).toBe('cpu=arm:4..8 mem=64GB gpu=H100,H200:8 disk=100GB..');
  });
});
