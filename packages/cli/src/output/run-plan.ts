import {
  DEFAULT_RUN_IDLE_DURATION,
  RUN_PRIORITY_DEFAULT,
  type RunConfiguration,
  type RunPlan,
} from '@dstack/core';
import type { Colors } from './colors.js';
import { formatDuration, formatPrice, formatResourcesSpec } from './format.js';
import { formatProperties } from './table.js';

function formatRetry(retry: RunConfiguration['retry']): string {
  if (!retry) return '-';
  return `${retry.on_events.join(', ')} for ${formatDuration(retry.duration)}`;
}

/** `Provider` and one `Job N` line per job the provider created, for a task with a provider. */
function providerProperties(plan: RunPlan, configuration: RunConfiguration): Array<[string, string]> {
  if (configuration.type !== 'task' || configuration.provider === undefined) return [];
  const jobs = plan.run_spec.provider_jobs ?? [];
  return [
    ['Provider', configuration.provider],
    ...jobs.map((job, index): [string, string] => [
      `Job ${index}`,
      `${job.name ? `${job.name}: ` : ''}${job.commands.join(' && ')}`,
    ]),
  ];
}

/**
 * The plan's properties: Project, User, Configuration, Type, the provider and its jobs (for a
 * task with a provider), Resources, Priority, Spot policy, Max price, Retry, Max duration, Idle duration
 * (defaults shown as the server applies them), and Reservation when the run names one.
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
      ...providerProperties(plan, configuration),
      ['Resources', formatResourcesSpec(configuration.resources)],
      ['Priority', String(configuration.priority ?? RUN_PRIORITY_DEFAULT)],
      ['Spot policy', configuration.spot_policy ?? 'on-demand'],
      ['Max price', configuration.max_price ? formatPrice(configuration.max_price) : '-'],
      ['Retry', formatRetry(configuration.retry)],
      ['Max duration', formatDuration(configuration.max_duration ?? 'off')],
      ['Idle duration', formatDuration(configuration.idle_duration ?? DEFAULT_RUN_IDLE_DURATION)],
      // As dstack: shown when the run names one.
      ...(configuration.reservation ? [['Reservation', configuration.reservation] as [string, string]] : []),
    ],
    colors.bold,
  );
}
