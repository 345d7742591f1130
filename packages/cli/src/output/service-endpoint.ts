import type { ServiceSpec } from '@dstack/core';
import { printable } from './printable.js';

/** A URL the server gives as a path (`/proxy/services/…`, its in-server proxy) made absolute. */
export function absoluteServiceUrl(url: string, serverUrl: string): string {
  return url.startsWith('/') ? `${serverUrl.replace(/\/+$/, '')}${url}` : url;
}

/**
 * Where a running service answers, as `dstack apply` prints it:
 * `Service is published at:` and the URL, then the model's endpoint when the service has one.
 */
export function formatServiceEndpoint(service: ServiceSpec, serverUrl: string): string {
  const lines = ['Service is published at:', `  ${printable(absoluteServiceUrl(service.url, serverUrl))}`];
  if (service.model) {
    lines.push(
      `Model ${printable(service.model.name)} is published at:`,
      `  ${printable(absoluteServiceUrl(service.model.base_url, serverUrl))}`,
    );
  }
  return `${lines.join('\n')}\n`;
}
