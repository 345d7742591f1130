/**
 * `/metrics` without `DSTACK_PROMETHEUS_AUTH_TOKEN` is open to whoever reaches the server, as in
 * dstack, and its labels name every project, user and run of the server. That is documented, and
 * easy to miss; the server says it at every start while it is so.
 */
import type { MetricsSettings } from './metrics-settings.js';

/** The start-up warning when `/metrics` is served to anyone; null when it is off or needs a token. */
export function openMetricsWarning(settings: MetricsSettings): string | null {
  if (!settings.prometheusEnabled || settings.prometheusAuthToken) return null;
  return (
    'GET /metrics is open to anyone who reaches the server (DSTACK_ENABLE_PROMETHEUS_METRICS is set,' +
    " DSTACK_PROMETHEUS_AUTH_TOKEN is not): it lists every project's name, its users' names, run names" +
    ' and run ids, and instance prices, without a login. Set DSTACK_PROMETHEUS_AUTH_TOKEN (Prometheus' +
    ' sends it as a bearer token), or let only Prometheus reach the server.'
  );
}
