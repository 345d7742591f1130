import type { RunStatus } from '@dstack/core';

export const FINISHED_RUN_STATUSES: readonly RunStatus[] = ['terminated', 'failed', 'done'];

export function formatCost(dollars: number | null | undefined): string {
  if (dollars === null || dollars === undefined) return '-';
  return `$${dollars < 1 ? dollars.toFixed(4) : dollars.toFixed(2)}`;
}

/** "3m ago" style, for tables read on a phone. */
export function formatAge(iso: string): string {
  const seconds = Math.max(0, (Date.now() - Date.parse(iso)) / 1000);
  if (seconds < 60) return `${Math.floor(seconds)}s ago`;
  if (seconds < 3600) return `${Math.floor(seconds / 60)}m ago`;
  if (seconds < 86400) return `${Math.floor(seconds / 3600)}h ago`;
  return `${Math.floor(seconds / 86400)}d ago`;
}

/** A status with its color class: green when working, red when failed, grey when over. */
export function statusClass(status: string): string {
  if (['running', 'active', 'idle', 'busy', 'done'].includes(status)) return 'status ok';
  if (['failed', 'terminated_by_server', 'error'].includes(status)) return 'status bad';
  if (['terminated', 'terminating'].includes(status)) return 'status off';
  return 'status wait';
}

/** Bytes as a binary-prefixed size, e.g. "1.5GB" (dstack's figures are powers of 1024). */
export function formatBytes(bytes: number): string {
  const units = ['B', 'KB', 'MB', 'GB', 'TB'];
  let value = bytes;
  let unit = 0;
  while (value >= 1024 && unit < units.length - 1) {
    value /= 1024;
    unit++;
  }
  return `${value >= 100 || unit === 0 ? Math.round(value) : value.toFixed(1)}${units[unit]}`;
}

export const formatPercent = (value: number): string => `${Math.round(value)}%`;

/** An instant in the browser's time zone, to the second: events a second apart stay apart. */
export function formatTime(iso: string): string {
  return new Date(iso).toLocaleString(undefined, {
    month: 'short',
    day: 'numeric',
    hour: '2-digit',
    minute: '2-digit',
    second: '2-digit',
  });
}
