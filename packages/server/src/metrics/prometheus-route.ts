/**
 * `GET /metrics`: Prometheus' scrape target, served only with `DSTACK_ENABLE_PROMETHEUS_METRICS`
 * (404 otherwise, as dstack) and, with `DSTACK_PROMETHEUS_AUTH_TOKEN`, only to requests bearing
 * that token (403 otherwise).
 */
import { timingSafeEqual } from 'node:crypto';
import { HttpError } from '../http/error-mapping.js';
import { defineRawRoute } from '../http/raw-route.js';
import { collectPrometheusMetrics } from './prometheus-metrics.js';
import { PROMETHEUS_CONTENT_TYPE, renderPrometheusText } from './prometheus-text.js';

function bearerTokenMatches(authorization: string | undefined, expected: string): boolean {
  const match = /^Bearer\s+(\S+)\s*$/i.exec(authorization ?? '');
  if (!match) return false;
  const given = Buffer.from(match[1]!);
  const wanted = Buffer.from(expected);
  return given.length === wanted.length && timingSafeEqual(given, wanted);
}

export const prometheusRoute = defineRawRoute({
  pathPrefix: '/metrics',
  summary: "Prometheus metrics (text format): the server, instances, runs and jobs, with dstack's names",
  async handle({ app, request, response }) {
    request.resume();
    const path = new URL(request.url ?? '/', 'http://server').pathname;
    if (!app.settings.metrics.prometheusEnabled || path.replace(/\/+$/, '') !== '/metrics') {
      throw new HttpError(404, `Not found: ${path}`, 'not_found');
    }
    if (request.method !== 'GET' && request.method !== 'HEAD') {
      response.setHeader('allow', 'GET, HEAD');
      throw new HttpError(405, `Method ${request.method} not allowed on /metrics`, 'method_not_allowed');
    }
    const token = app.settings.metrics.prometheusAuthToken;
    if (token && !bearerTokenMatches(request.headers.authorization, token)) {
      response.setHeader('www-authenticate', 'Bearer');
      throw new HttpError(403, 'Access denied', 'forbidden');
    }
    const body = renderPrometheusText(await collectPrometheusMetrics(app));
    response.writeHead(200, {
      'content-type': PROMETHEUS_CONTENT_TYPE,
      'content-length': Buffer.byteLength(body),
      'cache-control': 'no-store',
    });
    response.end(request.method === 'HEAD' ? undefined : body);
  },
});
