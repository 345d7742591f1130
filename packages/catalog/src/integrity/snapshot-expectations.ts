import type { IntegrityExpectations } from './check-catalog-integrity.js';

/**
 * What the bundled AWS snapshot must hold. gpuhunt's own list adds RTXPRO4500 and
 * RTXPRO6000 (g7/g7e), which this SkyPilot catalog version does not have; p3
 * (V100) is left out by gpuhunt's filter.
 */
export const AWS_SNAPSHOT_EXPECTATIONS: IntegrityExpectations = {
  gpuNames: ['H100', 'H200', 'A100', 'A10G', 'T4', 'L40S', 'L4'],
  gpuMemories: { A100: [40, 80], H100: [80], L4: [24] },
  instancesInLocations: {
    'm5.xlarge': ['us-east-1', 'us-west-2', 'eu-west-1'],
    't3.medium': ['us-east-1', 'us-west-2', 'eu-west-1'],
    'g5.xlarge': ['us-east-1', 'us-west-2', 'eu-west-1'],
  },
  priceScaling: [{ family: 'g6.' }, { family: 'g6e.' }, { family: 'g5.' }, { family: 'g4dn.' }],
};

/**
 * What the bundled GCP snapshot must hold: gpuhunt's NVIDIA list minus B200 and
 * RTXPRO6000 (no a4/g4 machine types in this catalog version), both A100 sizes,
 * and TPU slices of each generation gpuhunt tests.
 */
export const GCP_SNAPSHOT_EXPECTATIONS: IntegrityExpectations = {
  gpuNames: ['H100', 'H200', 'A100', 'L4', 'T4', 'V100', 'P100'],
  gpuNamesVendor: 'nvidia',
  gpuMemories: { A100: [40, 80] },
  gpuNamePrefixes: ['v2-', 'v3-', 'v5litepod-', 'v5p-', 'v6e-'],
  instancesInLocations: {
    'g2-standard-4': ['us-central1-a', 'us-east1-b', 'us-west1-a', 'europe-west4-a', 'asia-east1-a'],
    'a2-highgpu-1g': ['us-central1-a', 'us-east1-b', 'us-west1-b', 'europe-west4-a'],
  },
  priceScaling: [
    // VM and GPU parts both grow linearly with the GPUs.
    { family: 'a2-highgpu-', proportionalWithin: 1.05 },
    { family: 'a2-ultragpu-', proportionalWithin: 1.05 },
    { family: 'g2-standard-' },
  ],
};
