/** Valid API objects for fake server answers; each factory takes the few fields a test varies. */
import type {
  Fleet,
  InstanceOfferWithAvailability,
  JobSpec,
  JobTerminationReason,
  LogEvent,
  Run,
  RunPlan,
  RunSpec,
  RunStatus,
  User,
} from '@dstack/core';

const CREATED_AT = '2024-05-01T10:00:00.000Z';

export function makeUser(username = 'admin'): User {
  return {
    id: 'user-1',
    username,
    global_role: 'admin',
    created_at: CREATED_AT,
    active: true,
    permissions: { can_create_projects: true },
  };
}

export function makeOffer(
  overrides: Partial<{
    backend: string;
    region: string;
    name: string;
    price: number;
    cpus: number;
    gpus: number;
  }> = {},
): InstanceOfferWithAvailability {
  const gpus = Array.from({ length: overrides.gpus ?? 0 }, () => ({
    name: 'A100',
    memory_mib: 80 * 1024,
    vendor: 'nvidia' as const,
  }));
  return {
    backend: overrides.backend ?? 'local',
    region: overrides.region ?? 'local',
    price: overrides.price ?? 0,
    instance: {
      name: overrides.name ?? 'local',
      resources: {
        cpus: overrides.cpus ?? 4,
        memory_mib: 16 * 1024,
        gpus,
        spot: false,
        disk: { size_mib: 100 * 1024 },
      },
    },
    backend_data: {},
    availability: 'available',
    availability_zones: null,
    instance_runtime: 'shim',
    blocks: 1,
    total_blocks: 1,
  };
}

function makeJobSpec(runName: string): JobSpec {
  return {
    job_name: `${runName}-0-0`,
    job_num: 0,
    replica_num: 0,
    jobs_per_replica: 1,
    commands: ['echo hi'],
    env: {},
    image_name: 'dstackai/base',
    privileged: false,
    requirements: {
      resources: { cpu: { count: { min: 2, max: null } }, memory: { min: 8, max: null } },
    },
    ports: [],
    app_specs: [],
  };
}

export function makeRunSpec(runName: string): RunSpec {
  return { run_name: runName, configuration: { type: 'task', commands: ['echo hi'] } };
}

export interface RunFields {
  name: string;
  status: RunStatus;
  exitStatus?: number;
  submittedAt?: string;
  /** Set to give the run a provisioned instance (backend, price, GPUs). */
  provisioned?: { backend: string; region: string; price: number; gpus: number };
  error?: string;
  /** The job's termination reason; a failed run's default is `container_exited_with_error`. */
  terminationReason?: JobTerminationReason;
  terminationReasonMessage?: string;
}

export function makeRun(fields: RunFields): Run {
  const submittedAt = fields.submittedAt ?? CREATED_AT;
  const offer = fields.provisioned ? makeOffer(fields.provisioned) : undefined;
  const submission = {
    id: `${fields.name}-submission`,
    submission_num: 0,
    submitted_at: submittedAt,
    last_processed_at: submittedAt,
    status: fields.status === 'pending' ? ('submitted' as const) : fields.status,
    exit_status: fields.exitStatus ?? null,
    termination_reason:
      fields.terminationReason ??
      (fields.status === 'failed' ? ('container_exited_with_error' as const) : null),
    termination_reason_message: fields.terminationReasonMessage ?? null,
    job_provisioning_data:
      offer && fields.provisioned
        ? {
            backend: offer.backend,
            instance_type: offer.instance,
            instance_id: 'i-1',
            hostname: '127.0.0.1',
            public_ip_enabled: true,
            region: offer.region,
            price: offer.price,
            username: 'root',
            dockerized: true,
          }
        : null,
  };
  return {
    id: `${fields.name}-id`,
    project_name: 'main',
    user: 'admin',
    submitted_at: submittedAt,
    last_processed_at: submittedAt,
    status: fields.status,
    termination_reason:
      fields.status === 'failed' ? 'job_failed' : fields.status === 'done' ? 'all_jobs_done' : null,
    run_spec: makeRunSpec(fields.name),
    jobs: [{ job_spec: makeJobSpec(fields.name), job_submissions: [submission] }],
    latest_job_submission: submission,
    cost: 0,
    error: fields.error ?? null,
    deleted: false,
  } as Run;
}

export function makeRunPlan(
  runSpec: RunSpec,
  offers: InstanceOfferWithAvailability[],
  exclusions: { requirement: string; excluded: number }[] = [],
  warnings: string[] = [],
): RunPlan {
  const runName = runSpec.run_name ?? 'generated-run';
  return {
    project_name: 'main',
    user: 'admin',
    run_spec: { ...runSpec, run_name: runName },
    job_plans: [
      {
        job_spec: makeJobSpec(runName),
        offers,
        total_offers: offers.length,
        max_price: offers.length ? Math.max(...offers.map((offer) => offer.price)) : null,
        exclusions,
        warnings,
      },
    ],
    current_resource: null,
    action: 'create',
  };
}

export function makeFleet(name: string, instances: number): Fleet {
  const offer = makeOffer({ backend: 'local', price: 0.5 });
  return {
    id: `${name}-id`,
    name,
    project_name: 'main',
    spec: { configuration: { type: 'fleet', name, nodes: { min: instances, max: instances } } },
    created_at: CREATED_AT,
    status: 'active',
    instances: Array.from({ length: instances }, (_, index) => ({
      id: `${name}-${index}`,
      project_name: 'main',
      name: `${name}-${index}`,
      fleet_name: name,
      instance_num: index,
      status: 'idle' as const,
      unreachable: false,
      created: CREATED_AT,
      backend: 'local',
      region: 'local',
      instance_type: offer.instance,
      price: 0.5,
      busy_blocks: 0,
    })),
  };
}

/** A log event `milliseconds` after a fixed start. */
export function makeLogEvent(source: LogEvent['log_source'], text: string, milliseconds: number): LogEvent {
  return {
    timestamp: new Date(Date.parse('2024-05-01T10:00:00.000Z') + milliseconds).toISOString(),
    log_source: source,
    message: Buffer.from(text).toString('base64'),
  };
}
