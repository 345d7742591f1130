import type { IntegrityExpectations } from './check-catalog-integrity.js';

/**
 * What gpuhunt's CI demands of a freshly collected `aws.csv` before publishing it
 * (`src/integrity_tests/test_aws.py`, gpuhunt HEAD 3584151): m5.large in each listed region
 * and Local Zone, spot and on-demand offers, and these GPUs (H200 is commented out there: the
 * price list has no p5e on-demand rows). The price and order rules of
 * {@link checkCatalogIntegrity} apply too.
 */
export const AWS_GPUHUNT_EXPECTATIONS: IntegrityExpectations = {
  spotAndOnDemand: true,
  gpuNames: ['H100', 'A100', 'A10G', 'T4', 'L40S', 'RTXPRO4500', 'RTXPRO6000', 'L4'],
  instancesInLocations: {
    'm5.large': [
      'af-south-1',
      'ap-east-1',
      'ap-northeast-1',
      'ap-northeast-2',
      'ap-northeast-3',
      'ap-south-1',
      'ap-south-2',
      'ap-southeast-1',
      'ap-southeast-2',
      'ap-southeast-3',
      'ap-southeast-4',
      'ca-central-1',
      'eu-central-1',
      'eu-central-2',
      'eu-north-1',
      'eu-south-1',
      'eu-south-2',
      'eu-west-1',
      'eu-west-2',
      'eu-west-3',
      'il-central-1',
      'me-central-1',
      'me-south-1',
      'sa-east-1',
      'us-east-1',
      'us-east-2',
      'us-gov-east-1',
      'us-gov-west-1',
      'us-west-1',
      'us-west-2',
      'us-west-2-lax-1',
    ],
  },
};
