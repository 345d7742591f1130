import { describe, expect, it } from 'vitest';
import { switchingProtocolsHeaders, withoutHopByHopHeaders } from '../http/hop-by-hop-headers.js';
import { SANDBOX_POLICY } from '../http/origin-isolation.js';
import {
  downstreamResponseHeaders,
  upgradeRequestHeaders,
  upstreamRequestHeaders,
} from './service-proxy-headers.js';

const forwarded = {
  clientAddress: '10.0.0.7',
  protocol: 'http' as const,
  prefix: '/proxy/services/main/app',
  keepAuthorization: false,
};

describe('service proxy headers', () => {
  it('drops hop-by-hop headers and the ones Connection names', () => {
    expect(
      withoutHopByHopHeaders({
        connection: 'keep-alive, X-Custom-Hop',
        'keep-alive': 'timeout=5',
        'x-custom-hop': 'secret',
        'transfer-encoding': 'chunked',
        upgrade: 'websocket',
        te: 'trailers',
        'proxy-authorization': 'Basic abc',
        'content-type': 'text/plain',
        'x-end-to-end': 'kept',
      }),
    ).toEqual({ 'content-type': 'text/plain', 'x-end-to-end': 'kept' });
  });

  it('sets X-Real-IP and X-Forwarded-*, and leaves Host to the replica address', () => {
    const headers = upstreamRequestHeaders(
      { host: 'dstack.example:3000', accept: 'application/json', 'content-length': '12' },
      forwarded,
    );
    expect(headers).toEqual({
      accept: 'application/json',
      'content-length': '12',
      'x-real-ip': '10.0.0.7',
      'x-forwarded-for': '10.0.0.7',
      'x-forwarded-host': 'dstack.example:3000',
      'x-forwarded-proto': 'http',
      'x-forwarded-prefix': '/proxy/services/main/app',
    });
  });

  it('appends to an existing X-Forwarded-For chain and keeps what a front proxy set', () => {
    const headers = upstreamRequestHeaders(
      {
        host: '127.0.0.1:3000',
        'x-forwarded-for': '203.0.113.9',
        'x-real-ip': '198.51.100.66',
        'x-forwarded-host': 'dstack.example',
        'x-forwarded-proto': 'https',
      },
      forwarded,
    );
    expect(headers['x-forwarded-for']).toBe('203.0.113.9, 10.0.0.7');
    expect(headers['x-real-ip']).toBe('10.0.0.7');
    expect(headers['x-forwarded-host']).toBe('dstack.example');
    expect(headers['x-forwarded-proto']).toBe('https');
  });

  it('drops the dstack token unless the service does its own auth', () => {
    const request = { host: 'h', authorization: 'Bearer dstack-user-token' };
    expect(upstreamRequestHeaders(request, forwarded).authorization).toBeUndefined();
    expect(upstreamRequestHeaders(request, { ...forwarded, keepAuthorization: true }).authorization).toBe(
      'Bearer dstack-user-token',
    );
  });

  it('passes response headers on without hop-by-hop ones, repeated ones intact, under the sandbox', () => {
    expect(
      downstreamResponseHeaders({
        'content-type': 'text/event-stream',
        'set-cookie': ['a=1', 'b=2'],
        connection: 'close',
        'transfer-encoding': 'chunked',
        'content-security-policy': "script-src 'self'",
      }),
    ).toEqual({
      'content-type': 'text/event-stream',
      'set-cookie': ['a=1', 'b=2'],
      'content-security-policy': `${SANDBOX_POLICY}, script-src 'self'`,
    });
  });

  it('keeps the switch of an upgrade and its WebSocket headers, both ways', () => {
    const upgrade = upgradeRequestHeaders(
      {
        host: 'h',
        connection: 'keep-alive, Upgrade',
        upgrade: 'websocket',
        'keep-alive': 'timeout=5',
        'sec-websocket-key': 'dGhlIHNhbXBsZSBub25jZQ==',
        'sec-websocket-version': '13',
        authorization: 'Bearer dstack-user-token',
      },
      forwarded,
    );
    expect(upgrade).toEqual({
      connection: 'Upgrade',
      upgrade: 'websocket',
      'sec-websocket-key': 'dGhlIHNhbXBsZSBub25jZQ==',
      'sec-websocket-version': '13',
      'x-real-ip': '10.0.0.7',
      'x-forwarded-for': '10.0.0.7',
      'x-forwarded-host': 'h',
      'x-forwarded-proto': 'http',
      'x-forwarded-prefix': '/proxy/services/main/app',
    });
    expect(
      switchingProtocolsHeaders({
        connection: 'Upgrade',
        upgrade: 'websocket',
        'sec-websocket-accept': 's3pPLMBiTxaQ9kYGzzhZRbK+xOo=',
        'transfer-encoding': 'chunked',
      }),
    ).toEqual({
      connection: 'Upgrade',
      upgrade: 'websocket',
      'sec-websocket-accept': 's3pPLMBiTxaQ9kYGzzhZRbK+xOo=',
    });
  });
});
