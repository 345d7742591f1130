import { DEFAULT_RUN_IDLE_DURATION, type RunConfiguration, type RunPlan } from '@dstack/core';
import type { Colors } from './colors.js';
import { formatDuration, formatPrice, formatResourcesSpec } from './format.js';
import { formatProperties } from './table.js';

function formatRetry(retry: RunConfiguration['retry']): string {
  if (!retry) return '-';
  return `${retry.on_events.join(', ')} for ${formatDuration(retry.duration)}`;
}

/**
 * The plan's properties: Project, User, Configuration, Type, Resources, Spot policy, Max price,
 * Retry, Max duration, Idle duration (defaults shown as the server applies them).
 */
export function formatRunPlan(
  plan: RunPlan,
  configuration: RunConfiguration,
  configurationPath: string,
  colors: Colors,
): string {
  return formatProperties(
    [
      ['Project', plan.project_name],
      ['User', plan.user],
      ['Configuration', configurationPath],
      ['Type', configuration.type],
      ['Resources', formatResourcesSpec(configuration.resources)],
      ['Spot policy', configuration.spot_policy ?? 'on-demand'],
      ['Max price', configuration.max_price ? formatPrice(configuration.max_price) : '-'],
      ['Retry', formatRetry(configuration.retry)],
      ['Max duration', formatDuration(configuration.max_duration ?? 'off')],
      ['Idle duration', formatDuration(configuration.idle_duration ?? DEFAULT_RUN_IDLE_DURATION)],
    ],
    colors.bold,
  );
}
