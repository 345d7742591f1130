import { DescribeRegionsCommand } from '@aws-sdk/client-ec2';
import { GetProductsCommand, paginateGetProducts } from '@aws-sdk/client-pricing';
import {
  GetServiceQuotaCommand,
  ListServiceQuotasCommand,
  paginateListServiceQuotas,
} from '@aws-sdk/client-service-quotas';
import { GetCallerIdentityCommand } from '@aws-sdk/client-sts';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type AwsEmulator, DEFAULT_AWS_EMULATOR_CREDENTIALS } from './aws-emulator.js';
import { sdkClients, startTestEmulator } from './aws-emulator.test.helpers.js';
import { BULK_PRICE_LIST_PATH } from './aws-pricing.js';
import { VCPU_QUOTAS } from './aws-vcpu-quotas.js';

let emulator: AwsEmulator;
beforeAll(async () => {
  ({ emulator } = await startTestEmulator());
});
afterAll(async () => {
  await emulator.close();
});

const unknownKey = { accessKeyId: 'AKIAUNKNOWNKEY000001', secretAccessKey: 'x'.repeat(40) };
const wrongSecret = {
  accessKeyId: DEFAULT_AWS_EMULATOR_CREDENTIALS.accessKeyId,
  secretAccessKey: 'y'.repeat(40),
};

describe('credentials', () => {
  it('rejects an unknown key with each service own error', async () => {
    const clients = sdkClients(emulator, 'us-east-1', unknownKey);
    await expect(clients.ec2.send(new DescribeRegionsCommand({}))).rejects.toMatchObject({
      name: 'AuthFailure',
      message: 'AWS was not able to validate the provided access credentials',
      $metadata: { httpStatusCode: 401 },
    });
    await expect(clients.sts.send(new GetCallerIdentityCommand({}))).rejects.toMatchObject({
      name: 'InvalidClientTokenId',
      $metadata: { httpStatusCode: 403 },
    });
    await expect(
      clients.quotas.send(new GetServiceQuotaCommand({ ServiceCode: 'ec2', QuotaCode: 'L-1216C47A' })),
    ).rejects.toMatchObject({ name: 'UnrecognizedClientException', $metadata: { httpStatusCode: 403 } });
    await expect(
      clients.pricing.send(new GetProductsCommand({ ServiceCode: 'AmazonEC2' })),
    ).rejects.toMatchObject({
      name: 'UnrecognizedClientException',
    });
  });

  it('rejects a known key signed with the wrong secret', async () => {
    const clients = sdkClients(emulator, 'us-east-1', wrongSecret);
    await expect(clients.ec2.send(new DescribeRegionsCommand({}))).rejects.toMatchObject({
      name: 'SignatureDoesNotMatch',
      $metadata: { httpStatusCode: 403 },
    });
    await expect(clients.sts.send(new GetCallerIdentityCommand({}))).rejects.toMatchObject({
      name: 'SignatureDoesNotMatch',
    });
    await expect(
      clients.quotas.send(new ListServiceQuotasCommand({ ServiceCode: 'ec2' })),
    ).rejects.toMatchObject({ name: 'InvalidSignatureException' });
  });

  it('answers AuthFailure for a region the account does not have', async () => {
    const { ec2 } = sdkClients(emulator, 'ap-south-1');
    await expect(ec2.send(new DescribeRegionsCommand({}))).rejects.toMatchObject({
      name: 'AuthFailure',
      message: expect.stringContaining('region ap-south-1 is not emulated'),
    });
  });

  it('names the caller in GetCallerIdentity', async () => {
    const identity = await sdkClients(emulator).sts.send(new GetCallerIdentityCommand({}));
    expect(identity).toMatchObject({
      Account: emulator.accountId,
      Arn: `arn:aws:iam::${emulator.accountId}:user/dstack-emulator`,
      UserId: expect.stringMatching(/^AIDA/),
    });
  });
});

describe('Service Quotas', () => {
  it('lists every EC2 vCPU quota across pages and gets one by code', async () => {
    const { quotas } = sdkClients(emulator, 'us-west-2');
    const codes: string[] = [];
    let pages = 0;
    for await (const page of paginateListServiceQuotas(
      { client: quotas, pageSize: 5 },
      { ServiceCode: 'ec2' },
    )) {
      pages += 1;
      codes.push(...(page.Quotas ?? []).map((quota) => quota.QuotaCode ?? ''));
    }
    expect(pages).toBe(Math.ceil(VCPU_QUOTAS.length / 5));
    expect(codes).toEqual(VCPU_QUOTAS.map((quota) => quota.code));

    const p = await quotas.send(new GetServiceQuotaCommand({ ServiceCode: 'ec2', QuotaCode: 'L-417A185B' }));
    expect(p.Quota).toMatchObject({
      QuotaCode: 'L-417A185B',
      QuotaName: 'Running On-Demand P instances',
      Value: 1536,
      QuotaArn: `arn:aws:servicequotas:us-west-2:${emulator.accountId}:ec2/L-417A185B`,
    });
    await expect(
      quotas.send(new GetServiceQuotaCommand({ ServiceCode: 'ec2', QuotaCode: 'L-00000000' })),
    ).rejects.toMatchObject({ name: 'NoSuchResourceException' });
  });
});

describe('Pricing', () => {
  it('answers GetProducts with JSON-encoded price list items, filtered and paged', async () => {
    const { pricing } = sdkClients(emulator);
    const answer = await pricing.send(
      new GetProductsCommand({
        ServiceCode: 'AmazonEC2',
        FormatVersion: 'aws_v1',
        Filters: [
          { Type: 'TERM_MATCH', Field: 'instanceType', Value: 'g5.xlarge' },
          { Type: 'TERM_MATCH', Field: 'regionCode', Value: 'us-east-1' },
          { Type: 'TERM_MATCH', Field: 'operatingSystem', Value: 'Linux' },
          { Type: 'TERM_MATCH', Field: 'tenancy', Value: 'Shared' },
          { Type: 'TERM_MATCH', Field: 'capacitystatus', Value: 'Used' },
        ],
      }),
    );
    expect(answer.PriceList).toHaveLength(1);
    const item = JSON.parse(answer.PriceList?.[0] ?? '{}');
    expect(item.product.attributes).toMatchObject({
      instanceType: 'g5.xlarge',
      vcpu: '4',
      memory: '16 GiB',
      gpu: '1',
      regionCode: 'us-east-1',
      location: 'US East (N. Virginia)',
    });
    const [term] = Object.values(item.terms.OnDemand) as {
      priceDimensions: Record<string, { unit: string; pricePerUnit: { USD: string } }>;
    }[];
    const [dimension] = Object.values(term?.priceDimensions ?? {});
    const expected = emulator.data.offerings.find(
      (each) => each.instanceType === 'g5.xlarge' && each.region === 'us-east-1',
    )?.onDemandPrice;
    expect(dimension?.unit).toBe('Hrs');
    expect(Number(dimension?.pricePerUnit.USD)).toBe(expected);

    let total = 0;
    let pages = 0;
    for await (const page of paginateGetProducts(
      { client: pricing, pageSize: 100 },
      {
        ServiceCode: 'AmazonEC2',
        Filters: [{ Type: 'TERM_MATCH', Field: 'regionCode', Value: 'us-east-1' }],
      },
    )) {
      pages += 1;
      total += page.PriceList?.length ?? 0;
    }
    expect(pages).toBeGreaterThan(1);
    expect(total).toBe(
      4 *
        new Set(
          emulator.data.offerings
            .filter((each) => each.region === 'us-east-1' && each.onDemandPrice !== undefined)
            .map((each) => each.instanceType),
        ).size,
    );

    await expect(pricing.send(new GetProductsCommand({ ServiceCode: 'AmazonS3' }))).rejects.toMatchObject({
      name: 'InvalidParameterException',
    });
  });

  it('serves the bulk price list CSV: five disclaimer lines, a header, rows a collector keeps or drops', async () => {
    const response = await fetch(`${emulator.url}${BULK_PRICE_LIST_PATH}`);
    expect(response.headers.get('content-type')).toBe('text/csv');
    const lines = (await response.text()).trim().split('\n');
    expect(lines[0]).toBe('"FormatVersion","v1.0"');
    const header = JSON.parse(`[${lines[5]}]`) as string[];
    expect(header).toEqual(
      expect.arrayContaining([
        'Instance Type',
        'Region Code',
        'PricePerUnit',
        'vCPU',
        'Memory',
        'GPU',
        'TermType',
        'Tenancy',
        'Operating System',
        'CapacityStatus',
      ]),
    );
    const rows = lines.slice(6).map((line) => {
      // No value holds a double quote, so each quoted line reads as a JSON array.
      const fields = JSON.parse(`[${line}]`) as string[];
      return Object.fromEntries(header.map((name, index) => [name, fields[index]]));
    });
    const kept = rows.filter(
      (row) =>
        row['Operating System'] === 'Linux' && row.Tenancy === 'Shared' && row.CapacityStatus === 'Used',
    );
    expect(kept.length * 4).toBe(rows.length);
    const g5 = kept.find((row) => row['Instance Type'] === 'g5.xlarge' && row['Region Code'] === 'eu-west-1');
    expect(g5).toMatchObject({ vCPU: '4', Memory: '16 GiB', GPU: '1', Unit: 'Hrs', TermType: 'OnDemand' });
  });
});
