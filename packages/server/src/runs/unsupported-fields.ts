/**
 * Which fields of a run configuration (task, service, dev-environment, with the profile's
 * fields) this server honours, and the check that refuses the others when a run is planned or
 * applied (the same check for `runs/get_plan` and `runs/apply`). See `field-decisions.ts`.
 */
import { hasCapability, type RunConfiguration } from '@dstack/core';
import { DEFAULT_DIND_IMAGE, isDefaultJobImage } from '@dstack/core/agent-protocol';
import type { ProjectBackend } from '../backends/registry.js';
import {
  type FieldDecisions,
  isSet,
  refusedFields,
  refuseFields,
  reservationRefusal,
} from '../field-decisions.js';
import { cronExpressionError, isScheduled } from './run-schedule.js';

export const RUN_FIELD_DECISIONS: FieldDecisions = {
  type: { honoured: 'chooses the job configurator (job-specs.ts)' },
  name: { honoured: 'the run name (runs.ts)' },
  image: {
    honoured:
      "job spec image_name → the shim's Docker runtime runs it (job-running.ts); refused at plan time when no eligible backend runs images (Compute.imageRefusal), and by a shim without Docker at start",
  },
  user: { honoured: 'the shim task container_user (job-running.ts)' },
  privileged: { honoured: 'the shim task privileged → Docker Privileged' },
  working_dir: { honoured: 'job spec working_dir → the runner' },
  home_dir: { honoured: 'deprecated: dstack ignores it too' },
  registry_auth: { honoured: 'the shim task registry credentials', subtree: true },
  env: { honoured: 'job spec env → the runner' },
  commands: { honoured: 'job spec commands → the runner' },
  resources: { honoured: 'job requirements → offers and fleet instance matching' },
  'resources.cpu': { honoured: 'offers, instance-matching.ts (count and arch)', subtree: true },
  'resources.memory': { honoured: 'offers, instance-matching.ts', subtree: true },
  'resources.disk': { honoured: 'offers, instance-matching.ts', subtree: true },
  'resources.gpu': { honoured: 'offers, instance-matching.ts; the task gets the GPUs', subtree: true },
  'resources.shm_size': { honoured: 'the shim task shm_size → Docker ShmSize (job-running.ts)' },
  ports: { honoured: 'job spec ports; the CLI forwards them while attached', subtree: true },
  port: { honoured: 'the in-server service proxy forwards to it', subtree: true },
  auth: { honoured: 'the service proxy asks for a token (services/service-spec.ts)' },
  init: { honoured: 'dev environment commands (job-specs.ts)' },
  inactivity_duration: { honoured: 'job-running.ts stops an idle dev environment' },
  provider: { honoured: 'the CLI expands it into provider_jobs (job-specs.ts)' },
  parameters: { honoured: 'the CLI passes them to the provider' },
  model: {
    honoured:
      "the run's service spec (services/service-spec.ts) and the model endpoint /proxy/models (proxies/model-proxy.ts)",
  },
  'model.type': { honoured: 'service spec model type' },
  'model.name': { honoured: 'service spec model name' },
  'model.prefix': { honoured: 'service spec model base_url; where the model endpoint routes requests' },
  'model.format': {
    refused: 'the proxy does not translate OpenAI requests to TGI',
    check: (value) => (value === 'tgi' ? "the 'tgi' format is not supported yet (use openai)" : null),
    example: { model: { name: 'm', format: 'tgi' } },
  },
  'model.chat_template': {
    refused: 'only with tgi',
    example: { model: { name: 'm', format: 'tgi', chat_template: 'x' } },
  },
  'model.eos_token': {
    refused: 'only with tgi',
    example: { model: { name: 'm', format: 'tgi', eos_token: 'x' } },
  },
  backends: { honoured: 'offer filters and fleet instance matching' },
  regions: { honoured: 'offer filters and fleet instance matching' },
  instance_types: { honoured: 'offer filters' },
  reservation: {
    honoured:
      "Requirements.reservation: only backends with the 'reservations' capability are offered (backends/offers.ts; aws: the Capacity Reservation's or Capacity Block's type in its zone, launched into it; gcp: the machine of a READY specific reservation, consumed through reservationAffinity); a plan without offers says why (explainNoOffers); refused at plan time when no eligible backend has it (runs/unsupported-fields.ts)",
  },
  spot_policy: { honoured: 'Requirements.spot: offers and instance matching' },
  retry: { honoured: 'the run pipeline resubmits (run-pipeline.ts)' },
  'retry.on_events': { honoured: 'run-pipeline.ts, job-submitted.ts (no-capacity waits)' },
  'retry.duration': { honoured: 'run-pipeline.ts' },
  max_duration: { honoured: 'job-running.ts terminates the job' },
  stop_duration: { honoured: 'job-terminating.ts: graceful stop, then kill' },
  max_price: { honoured: 'Requirements.max_price' },
  creation_policy: { honoured: 'job-submitted.ts: reuse takes fleet instances only' },
  idle_duration: { honoured: "the run's instances' termination idle time (job-submitted.ts)" },
  fleets: { honoured: 'job-submitted.ts candidate fleets' },
  tags: { honoured: "runJob receives the run's configuration; backends tag what they create" },
  backend_options: { honoured: 'Requirements.backend_options, for the backend', subtree: true },
  python: {
    honoured:
      "the job's commands make a venv of it with the base image's uv (job-commands.ts); dstack 0.21's base image tag has no Python",
  },
  nvcc: { honoured: "the default image's -devel- variant (job-specs.ts)" },
  docker: {
    honoured:
      "dstack's dind image (DSTACK_DIND_IMAGE), privileged, start-dockerd before the commands (job-specs.ts, job-commands.ts); refused at plan time when no eligible backend runs images",
  },
  entrypoint: { honoured: "job spec commands: the entrypoint's words, then `commands` (job-commands.ts)" },
  shell: {
    honoured:
      'job spec commands: `<shell> -i -c` (job-commands.ts); /bin/sh on a host without containers unless set',
  },
  single_branch: {
    honoured:
      'job spec single_branch (default: true but for dev environments) → the runner clones --single-branch',
  },
  priority: {
    honoured:
      'runs.priority; a job leaves capacity a waiting job of a higher-priority run fits to it (run-priority.ts, job-submitted.ts)',
  },
  volumes: {
    honoured:
      "network volumes are attached to the job's instance and mounted at their paths, instance paths bind-mounted (volumes/job-volumes.ts, job-running.ts); the job is placed where its volumes are; refused at plan time when a volume is missing, not active or mountable by no eligible backend (runs/run-volumes.ts)",
    subtree: true,
  },
  repos: {
    honoured:
      'the CLI packs the repo (a diff against the remote commit, or an archive) and uploads it; the runner checks it out at path before the commands (repos/, job-running.ts)',
    subtree: true,
  },
  files: {
    honoured: 'the CLI uploads each as an archive (files/upload_archive); the runner unpacks it at its path',
    subtree: true,
  },
  dstack: { refused: 'the server is not made reachable from runs', example: { dstack: true } },
  setup: {
    refused: 'tasks and services do not run it',
    check: (value) => (isSet(value) ? 'not supported yet (use commands)' : null),
    example: { setup: ['true'] },
  },
  availability_zones: {
    honoured:
      "offers (backends/offers.ts) and fleet instances (fleet-instance-offers.ts) outside the zones are skipped; a job's volumes cut them further (job-volumes.ts); offers without zones (local) pass",
  },
  utilization_policy: {
    honoured:
      "job spec utilization_policy: job-running.ts terminates a job a GPU of which stayed under the threshold for the window, from the job's metrics (runs/gpu-utilization.ts); refused at plan and apply when none of the run's offers has a GPU",
    subtree: true,
  },
  startup_order: {
    honoured:
      'the nodes of a cluster start together; master-first and workers-first hold the others until that one runs (cluster-gang.ts)',
  },
  stop_criteria: { honoured: 'master-done ends the run when its master job is done (run-pipeline.ts)' },
  schedule: {
    // Honoured for tasks and dev environments (run-schedule.ts, run-pipeline.ts); refused here:
    // what croner cannot read, and services (unsupportedRunFields).
    refused: 'cron expressions croner cannot read; a service is not scheduled yet',
    subtree: true,
    check: (value) => {
      const crons = (value as { cron?: unknown } | undefined)?.cron;
      if (!Array.isArray(crons)) return null;
      const errors = crons.map((cron) => cronExpressionError(String(cron))).filter((error) => error !== null);
      return errors.length > 0 ? errors.join('; ') : null;
    },
    example: { schedule: { cron: '61 * * * *' } },
  },
  instances: {
    refused: 'runs are not placed on named instances',
    subtree: true,
    example: { instances: ['box'] },
  },
  nodes: {
    honoured:
      'one job per node, started together on one cluster fleet (job-submitted.ts, cluster-gang.ts); refused at plan time when no eligible backend has the multinode capability',
  },
  groups: {
    refused: 'node groups are not built into jobs',
    subtree: true,
    example: { commands: [], groups: [{ commands: ['true'] }] },
  },
  ide: { honoured: 'the CLI prints the IDE link of the dev environment (apply, attach); SSH reaches it' },
  version: { refused: 'no IDE server is installed in the job', example: { ide: 'vscode', version: '1.0' } },
  gateway: {
    honoured:
      'a running gateway of the project publishes the service at https://{run}.{domain} (services/service-gateway.ts); false: the server proxy',
  },
  https: {
    honoured:
      "on a gateway as dstack: the URL's scheme, HTTPS with the gateway's certificate (lets-encrypt: one per service) and plain HTTP redirected; auto: HTTPS when the gateway has a certificate (services/service-https.ts)",
  },
  strip_prefix: {
    refused: 'the service proxy always strips its prefix',
    check: (value) => (value === false ? 'only true is supported yet' : null),
    example: { strip_prefix: false },
  },
  scaling: {
    honoured:
      "the run pipeline scales between the range bounds on the requests per second the server's proxy and the service's gateway forwarded (services/service-scaling.ts, services/service-stats.ts)",
    subtree: true,
  },
  rate_limits: {
    honoured:
      "the service proxy, or the service's gateway, answers 429 with Retry-After past a limit (core's agent-protocol/service-rate-limits.ts)",
    subtree: true,
  },
  probes: {
    honoured:
      'the run pipeline probes each running replica; the proxy sends requests only to ready ones (services/replica-probes.ts)',
    subtree: true,
  },
  replicas: {
    honoured:
      'a count, a range with scaling, or replica groups, each kept at its own count with jobs of its own (services/service-scaling.ts, runs/job-specs.ts)',
  },
  'replicas.min': { honoured: 'the least replicas the service keeps (services/service-scaling.ts)' },
  'replicas.max': { honoured: 'the most replicas the autoscaler starts (services/service-scaling.ts)' },
  'replicas[].name': { honoured: "job spec replica_group; the group's replicas are counted by it" },
  'replicas[].count': { honoured: "the group's desired count (services/service-scaling.ts)", subtree: true },
  'replicas[].scaling': { honoured: "the group's autoscaler (services/service-scaling.ts)", subtree: true },
  'replicas[].resources': {
    honoured: "the group's job requirements → offers and instance matching",
    subtree: true,
  },
  'replicas[].spot_policy': { honoured: "the group's Requirements.spot" },
  'replicas[].reservation': { honoured: "the group's Requirements.reservation" },
  'replicas[].commands': { honoured: "the group's job spec commands" },
  'replicas[].image': { honoured: "the group's job spec image_name" },
  'replicas[].python': { honoured: "the group's default image tag" },
  'replicas[].nvcc': { honoured: "the group's default image -devel variant" },
  'replicas[].privileged': { honoured: "the group's shim task privileged" },
  'replicas[].docker': { honoured: "the group's dind image, privileged, start-dockerd (job-specs.ts)" },
  'replicas[].router': {
    refused: 'no in-service router (sglang) is run',
    subtree: true,
    example: { commands: [], replicas: [{ count: 1, commands: ['true'], router: { type: 'sglang' } }] },
  },
};

/** What the project offers a run besides its backends. */
export interface RunFieldsContext {
  /** The project has an SSH fleet with `placement: cluster`: its hosts form a cluster of their own. */
  sshClusterFleet?: boolean;
}

/** The run configuration's fields this server does not honour, each as `path: reason`. */
export function unsupportedRunFields(
  configuration: RunConfiguration,
  backends: readonly ProjectBackend[],
  context: RunFieldsContext = {},
): Array<{ path: string; reason: string }> {
  const refusals = refusedFields(RUN_FIELD_DECISIONS, configuration);
  // `setup` is a dev environment's; the table cannot tell the types apart.
  const kept = refusals.filter(
    (refusal) => !(refusal.path === 'setup' && configuration.type === 'dev-environment'),
  );
  const reservation = reservationRefusal(configuration.reservation, configuration.backends, backends);
  const image = imageRefusal(configuration.image, configuration.backends, backends);
  const docker = dockerRefusal(configuration.docker, configuration.backends, backends);
  const nodes = nodesRefusal(configuration, backends, context);
  const schedule =
    configuration.type === 'service' && isScheduled(configuration)
      ? { path: 'schedule', reason: 'a service is not scheduled yet' }
      : null;
  return [
    ...(schedule ? [schedule] : []),
    ...kept,
    ...(reservation ? [reservation] : []),
    ...(image ? [image] : []),
    ...(docker ? [docker] : []),
    ...(nodes ? [nodes] : []),
    ...replicaGroupRefusals(configuration, backends),
  ];
}

/** A replica group's own `image` and `reservation`, refused as the service's would be. */
function replicaGroupRefusals(
  configuration: RunConfiguration,
  backends: readonly ProjectBackend[],
): Array<{ path: string; reason: string }> {
  if (configuration.type !== 'service' || !Array.isArray(configuration.replicas)) return [];
  return configuration.replicas.flatMap((group, index) => {
    const at = (refusal: { path: string; reason: string } | null) =>
      refusal ? [{ path: `replicas[${index}].${refusal.path}`, reason: refusal.reason }] : [];
    return [
      ...at(reservationRefusal(group.reservation, configuration.backends, backends)),
      ...at(imageRefusal(group.image, configuration.backends, backends)),
      ...at(dockerRefusal(group.docker, configuration.backends, backends)),
    ];
  });
}

/**
 * `nodes` above 1 refused when no eligible backend can give the nodes a network they share (the
 * `multinode` capability: not Vast.ai, whose rentals are containers on unrelated hosts) and the
 * project has no SSH cluster fleet, whose hosts are on a network of their own.
 */
function nodesRefusal(
  configuration: RunConfiguration,
  backends: readonly ProjectBackend[],
  context: RunFieldsContext,
): { path: string; reason: string } | null {
  const nodes = configuration.type === 'task' ? (configuration.nodes ?? 1) : 1;
  if (nodes <= 1 || context.sshClusterFleet) return null;
  const wanted = configuration.backends;
  const eligible = backends.filter((backend) => !wanted?.length || wanted.includes(backend.type));
  if (eligible.some((backend) => hasCapability(backend.compute, 'multinode'))) return null;
  const names = eligible.map((backend) => backend.type).join(', ');
  return {
    path: 'nodes',
    reason: names
      ? `a task on ${nodes} nodes needs instances that reach each other on a shared network, which no eligible backend gives (${names}: its instances share no network)`
      : `a task on ${nodes} nodes needs a backend whose instances reach each other, or an SSH fleet with placement: cluster; the project has neither`,
  };
}

/** `image` refused when every eligible backend says its jobs cannot run in one (the reasons joined). */
function imageRefusal(
  image: string | null | undefined,
  wanted: readonly string[] | null | undefined,
  backends: readonly ProjectBackend[],
): { path: string; reason: string } | null {
  if (image == null || isDefaultJobImage(image)) return null;
  const eligible = backends.filter((backend) => !wanted?.length || wanted.includes(backend.type));
  const reasons = eligible.map((backend) => backend.compute.imageRefusal?.() ?? null);
  if (eligible.length === 0 || reasons.some((reason) => reason === null)) return null;
  return { path: 'image', reason: [...new Set(reasons)].join('; ') };
}

/** `docker: true` refused as an image is: it runs in dstack's dind image, which a host without containers cannot run. */
function dockerRefusal(
  docker: boolean | null | undefined,
  wanted: readonly string[] | null | undefined,
  backends: readonly ProjectBackend[],
): { path: string; reason: string } | null {
  if (docker !== true) return null;
  const refusal = imageRefusal(DEFAULT_DIND_IMAGE, wanted, backends);
  return refusal && { path: 'docker', reason: refusal.reason };
}

/** Throws a 400 naming every field of the run's configuration this server does not honour. */
export function refuseUnsupportedRunFields(
  configuration: RunConfiguration,
  backends: readonly ProjectBackend[],
  context: RunFieldsContext = {},
): void {
  refuseFields(unsupportedRunFields(configuration, backends, context), ['run_spec', 'configuration']);
}
