/**
 * A service's `https` on a gateway, as dstack decides it (`services/__init__.py`): whether its
 * URL is `https://`, and whether the gateway serves it over HTTPS (for `lets-encrypt`, obtains
 * its certificate; plain HTTP then redirects). `https` defaults to true; `auto` means HTTPS when
 * the gateway has a certificate. `acm` certificates (a load balancer's) are refused here.
 */
import type { GatewayConfiguration, ServiceConfiguration } from '@dstack/core';

type ServiceHttps = ServiceConfiguration['https'];
type GatewayCertificate = GatewayConfiguration['certificate'];

/** dstack's `_should_show_service_https`: the service's URL is `https://`. */
export function serviceUrlIsHttps(https: ServiceHttps, certificate: GatewayCertificate): boolean {
  if (https === 'auto') return certificate !== null;
  return https ?? true;
}

/** dstack's `should_configure_service_https_on_gateway`: the gateway terminates TLS for it. */
export function gatewayServesServiceHttps(https: ServiceHttps, certificate: GatewayCertificate): boolean {
  if (certificate?.type === 'acm') return false;
  if (https === 'auto') return certificate !== null;
  return https ?? true;
}
