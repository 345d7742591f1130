#!/usr/bin/env node
/**
 * `dstack-gateway --home DIR --token-file PATH [--api-port N] [--https-port N] [--http-port N]`: the
 * gateway agent a gateway instance runs from the agent runtime (`gateway.mjs`). `--version` prints
 * the version. The token, which the management API requires of every request, comes from
 * `--token-file` (mode 0600) or `DSTACK_GATEWAY_TOKEN`; without one the agent does not start.
 */
import { parseArgs } from 'node:util';
import {
  DSTACK_GATEWAY_API_PORT,
  DSTACK_GATEWAY_HTTP_PORT,
  DSTACK_GATEWAY_HTTPS_PORT,
  GATEWAY_TOKEN_ENV,
} from '@dstack/core/agent-protocol';
import { startGateway } from '../gateway/gateway-server.js';
import { VERSION } from '../version.js';
import { readAgentToken } from './read-agent-token.js';

function port(value: string | undefined, fallback: number, name: string): number {
  if (value === undefined) return fallback;
  const parsed = Number(value);
  if (!Number.isInteger(parsed) || parsed < 0 || parsed > 65535)
    throw new Error(`--${name}: not a port: ${value}`);
  return parsed;
}

async function main(argv: string[]): Promise<void> {
  const { values } = parseArgs({
    args: argv,
    options: {
      home: { type: 'string' },
      'api-port': { type: 'string' },
      'https-port': { type: 'string' },
      'http-port': { type: 'string' },
      'token-file': { type: 'string' },
      version: { type: 'boolean' },
    },
  });
  if (values.version) {
    process.stdout.write(`${VERSION}\n`);
    return;
  }
  if (!values.home) throw new Error('--home is required');
  const apiToken = await readAgentToken(values['token-file'], GATEWAY_TOKEN_ENV);
  // An open management API lets whoever reaches it decide what the gateway serves.
  if (apiToken === null) throw new Error(`--token-file (or ${GATEWAY_TOKEN_ENV}) is required`);
  const gateway = await startGateway({
    home: values.home,
    apiToken,
    apiPort: port(values['api-port'], DSTACK_GATEWAY_API_PORT, 'api-port'),
    httpsPort: port(values['https-port'], DSTACK_GATEWAY_HTTPS_PORT, 'https-port'),
    httpPort: port(values['http-port'], DSTACK_GATEWAY_HTTP_PORT, 'http-port'),
  });
  process.stderr.write(
    `dstack-gateway ${VERSION}: API on 127.0.0.1:${gateway.apiPort}, HTTP on ${gateway.httpPort}, HTTPS ${gateway.httpsPort ?? 'once a certificate is sent'}\n`,
  );
  const stop = () => void gateway.close().then(() => process.exit(0));
  process.once('SIGTERM', stop);
  process.once('SIGINT', stop);
}

main(process.argv.slice(2)).catch((error: unknown) => {
  process.stderr.write(`dstack-gateway: ${error instanceof Error ? error.message : String(error)}\n`);
  process.exit(1);
});
