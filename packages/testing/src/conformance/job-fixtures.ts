import type {
  InstanceConfiguration,
  InstanceOfferWithAvailability,
  ProjectSshKeys,
  Requirements,
  RunJobParams,
} from '@dstack/core';
import { RequirementsSchema } from '@dstack/core';

/** Any offer with at least one CPU: no GPU, memory, disk, price or spot constraint. */
export function anyCpuOfferRequirements(): Requirements {
  return RequirementsSchema.parse({ resources: { cpu: { count: { min: 1 } }, memory: { min: null } } });
}

/**
 * Where the suite's `runJob` says the runner runtime is (`RunJobParams.runnerDownloadUrl`) unless
 * told otherwise: nothing answers there, so a container an emulator boots from it never runs a
 * runner. Give `runnerDownloadUrl` to `testBackend` to serve a real one.
 */
export const CONFORMANCE_RUNNER_DOWNLOAD_URL = 'http://127.0.0.1:9/dstack-runtime.tar.gz';

/** The job's image in the suite's launches unless told otherwise (`jobImage` of `testBackend`). */
export const CONFORMANCE_JOB_IMAGE = 'dstackai/base:latest';

/** The `runJob` parameters of a one-node task named `<runName>` on `offer`, launched as dstack instance `instanceId`. */
export function conformanceRunJobParams(options: {
  instanceId: string;
  agentToken: string;
  runName: string;
  projectName: string;
  offer: InstanceOfferWithAvailability;
  requirements: Requirements;
  keys: ProjectSshKeys;
  runnerDownloadUrl?: string;
  imageName?: string;
}): RunJobParams {
  return {
    instanceId: options.instanceId,
    agentToken: options.agentToken,
    runnerDownloadUrl: options.runnerDownloadUrl ?? CONFORMANCE_RUNNER_DOWNLOAD_URL,
    run: {
      project_name: options.projectName,
      user: 'conformance',
      run_spec: {
        run_name: options.runName,
        ssh_key_pub: options.keys.publicKey,
        configuration: { type: 'task', commands: ['true'] },
        merged_profile: { tags: { 'dstack-conformance': 'true' } },
      },
    },
    job: {
      job_spec: {
        job_name: `${options.runName}-0-0`,
        job_num: 0,
        replica_num: 0,
        image_name: options.imageName ?? CONFORMANCE_JOB_IMAGE,
        privileged: false,
        requirements: options.requirements,
      },
    },
    offer: options.offer,
    projectSshPublicKey: options.keys.publicKey,
    projectSshPrivateKey: options.keys.privateKey,
    volumes: [],
    placementGroup: null,
    requirements: options.requirements,
  };
}

/** The `createInstance` configuration of a fleet instance named `<instanceName>`, dstack instance `instanceId`. */
export function conformanceInstanceConfiguration(options: {
  instanceId: string;
  agentToken: string;
  instanceName: string;
  projectName: string;
  keys: ProjectSshKeys;
}): InstanceConfiguration {
  return {
    project_name: options.projectName,
    instance_name: options.instanceName,
    instance_id: options.instanceId,
    agent_token: options.agentToken,
    user: 'conformance',
    // The project key with its private half, as the server gives it (a backend without user data logs in with it).
    ssh_keys: [{ public: options.keys.publicKey, private: options.keys.privateKey }],
    volumes: [],
    tags: { 'dstack-conformance': 'true' },
  };
}
