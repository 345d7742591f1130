/**
 * Service Quotas (JSON 1.1, `X-Amz-Target: ServiceQuotasV20190624.*`): ListServiceQuotas and
 * GetServiceQuota for EC2's vCPU quotas, the values dstack and gpuhunt read to mark offers
 * `no_quota`.
 */
import type { EmulatorResponse } from '../../emulator/emulator-responses.js';
import type { Ec2Account } from './aws-ec2-account.js';
import { decodePageToken, encodePageToken } from './aws-query-params.js';
import { VCPU_QUOTAS, type VcpuQuota } from './aws-vcpu-quotas.js';
import { awsJsonError, awsJsonResponse } from './aws-xml.js';

export const SERVICE_QUOTAS_TARGET_PREFIX = 'ServiceQuotasV20190624.';

function quotaJson(account: Ec2Account, region: string, quota: VcpuQuota) {
  return {
    ServiceCode: 'ec2',
    ServiceName: 'Amazon Elastic Compute Cloud (Amazon EC2)',
    QuotaArn: `arn:aws:servicequotas:${region}:${account.accountId}:ec2/${quota.code}`,
    QuotaCode: quota.code,
    QuotaName: quota.name,
    Value: account.quotaValue(quota),
    Unit: 'None',
    Adjustable: true,
    GlobalQuota: false,
    UsageMetric: {
      MetricNamespace: 'AWS/Usage',
      MetricName: 'ResourceCount',
      MetricDimensions: {
        Class: quota.market === 'spot' ? `${quota.instanceClass}/Spot` : `${quota.instanceClass}/OnDemand`,
        Resource: 'vCPU',
        Service: 'EC2',
        Type: 'Resource',
      },
      MetricStatisticRecommendation: 'Maximum',
    },
    QuotaAppliedAtLevel: 'ACCOUNT',
  };
}

export function handleServiceQuotasAction(
  account: Ec2Account,
  region: string,
  operation: string,
  body: unknown,
): EmulatorResponse {
  const input = (typeof body === 'object' && body !== null ? body : {}) as Record<string, unknown>;
  if (input.ServiceCode !== 'ec2') {
    if (typeof input.ServiceCode !== 'string') {
      return awsJsonError(
        400,
        'ValidationException',
        '1 validation error detected: ServiceCode must not be null',
      );
    }
    return awsJsonError(
      400,
      'NoSuchResourceException',
      `The request failed because the specified service does not exist.`,
    );
  }
  switch (operation) {
    case 'GetServiceQuota':
    case 'GetAWSDefaultServiceQuota': {
      const quota = VCPU_QUOTAS.find((each) => each.code === input.QuotaCode);
      if (!quota) {
        return awsJsonError(
          400,
          'NoSuchResourceException',
          `The request failed because the specified quota does not exist.`,
        );
      }
      return awsJsonResponse({ Quota: quotaJson(account, region, quota) });
    }
    case 'ListServiceQuotas':
    case 'ListAWSDefaultServiceQuotas': {
      const size = typeof input.MaxResults === 'number' ? input.MaxResults : 100;
      if (!Number.isInteger(size) || size < 1 || size > 100) {
        return awsJsonError(400, 'ValidationException', 'MaxResults must be between 1 and 100');
      }
      let offset = 0;
      if (typeof input.NextToken === 'string' && input.NextToken !== '') {
        try {
          offset = decodePageToken(input.NextToken);
        } catch {
          return awsJsonError(400, 'InvalidPaginationTokenException', 'Invalid pagination token.');
        }
      }
      const page = VCPU_QUOTAS.slice(offset, offset + size);
      const next = offset + page.length;
      return awsJsonResponse({
        Quotas: page.map((quota) => quotaJson(account, region, quota)),
        ...(next < VCPU_QUOTAS.length ? { NextToken: encodePageToken(next) } : {}),
      });
    }
    default:
      return awsJsonError(400, 'UnknownOperationException', `Unknown operation ${operation}`);
  }
}
