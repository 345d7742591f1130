/** Gateway configurations in the CLI: certificate files read beside the configuration, and the table. */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Gateway, GatewayConfiguration } from '@dstack/core';
import { afterAll, describe, expect, it } from 'vitest';
import { createColors } from '../output/colors.js';
import { formatGateways, withCertificateFiles } from './gateway.js';

const PEM = '-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n';

describe('gateway configurations', () => {
  const dir = mkdtempSync(join(tmpdir(), 'dstack-cli-gateway-'));
  afterAll(() => rmSync(dir, { recursive: true, force: true }));
  const configuration = (certificate: GatewayConfiguration['certificate']): GatewayConfiguration => ({
    type: 'gateway',
    backend: 'aws',
    region: 'us-east-1',
    domain: 'example.com',
    public_ip: true,
    replicas: 1,
    certificate,
  });

  it('reads a custom certificate and key named relative to the configuration; PEM is kept as it is', async () => {
    writeFileSync(join(dir, 'key.pem'), 'the key\n');
    const read = await withCertificateFiles(
      configuration({ type: 'custom', certificate: PEM, private_key: 'key.pem' }),
      join(dir, 'gateway.dstack.yml'),
    );
    expect(read.certificate).toEqual({ type: 'custom', certificate: PEM, private_key: 'the key\n' });
  });

  it('names the field of a file it cannot read', async () => {
    await expect(
      withCertificateFiles(
        configuration({ type: 'custom', certificate: 'missing.pem', private_key: PEM }),
        join(dir, 'gateway.dstack.yml'),
      ),
    ).rejects.toThrow(/^certificate\.certificate: cannot read .*missing\.pem/);
  });

  it('lists a gateway with its backend, address, domain, default mark and status', () => {
    const gateway = {
      id: 'g1',
      name: 'main-gateway',
      project_name: 'main',
      configuration: { type: 'gateway', backend: 'aws', region: 'us-east-1' },
      created_at: new Date().toISOString(),
      status: 'running',
      wildcard_domain: 'example.com',
      default: true,
      replicas: [
        {
          hostname: '203.0.113.7',
          replica_num: 0,
          created_at: new Date().toISOString(),
          status: 'running',
        },
      ],
    } as Gateway;
    const table = formatGateways([gateway], createColors(false));
    expect(table).toMatch(/NAME\s+BACKEND\s+HOSTNAME\s+DOMAIN\s+DEFAULT\s+STATUS\s+CREATED/);
    expect(table).toMatch(/main-gateway\s+aws \(us-east-1\)\s+203\.0\.113\.7\s+example\.com\s+✓\s+running/);
  });
});
