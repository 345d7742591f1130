/**
 * The Nebius emulator: a gRPC server on loopback (plaintext) serving Nebius's published protos as
 * `*.api.nebius.cloud:443` do, every service at one address (`apiUrl`, a backend's `endpoint_url`
 * `http://127.0.0.1:<port>`; `url` is the HTTP control server of every emulator), so the backend's real grpc-js client runs unchanged against it.
 *
 *   nebius.iam.v1.TokenExchangeService.Exchange   a service account's RS256 JWT (kid = public key ID,
 *                                                iss = sub = account ID, Nebius's audience) → Bearer IAM token
 *   nebius.iam.v1.TenantService.List, ProjectService.List/Get     one tenant, projects by region
 *   nebius.vpc.v1.SubnetService.List               each project's `default-subnet-…`
 *   nebius.compute.v1.PlatformService.List         platforms and presets
 *   nebius.compute.v1.DiskService.Create/Get/GetByName/Delete boot disks from an image family
 *   nebius.compute.v1.InstanceService.Create/Get/GetByName/List/Delete
 *   nebius.compute.v1.GpuClusterService.Create/Get/Delete      InfiniBand clusters on a region's fabrics
 *   nebius.common.v1.OperationService.Get          the long-running Operations those return
 *   nebius.billing.v1alpha1.CalculatorService.Estimate        an instance spec's hourly price
 *
 * Instances go CREATING → STARTING → RUNNING (with hosts: once the host is up; its address is the
 * interface's public and private IP), DELETING → gone; an instance needs its boot disk READY, and
 * a disk attached to an instance cannot be deleted. `preemptInstance` preempts a preemptible one as
 * Nebius documents it (`on_preemption: STOP`, the only policy): Compute stops the VM without
 * deleting or restarting it, STOPPING → STOPPED, its host gone; `Get` still answers it, with its boot
 * disk attached and a static public address kept (a dynamic one is released), until it is deleted. With `hosts`, an instance boots a host of
 * Nebius's Ubuntu + CUDA image (Docker included) that runs the spec's cloud-init user data.
 *
 * This module wires the server; IAM is in `nebius-iam.ts`, disks, instances, GPU clusters and
 * operations in `nebius-compute.ts`, the public shapes in `nebius-emulator-types.ts`.
 */
import * as grpc from '@grpc/grpc-js';
import { json } from '../../emulator/emulator-responses.js';
import { startEmulatorServer } from '../../emulator/emulator-server.js';
import { controlError, emulatorControlRoutes } from '../emulator-control-routes.js';
import { createNebiusCompute } from './nebius-compute.js';
import {
  DEFAULT_NEBIUS_FABRICS,
  DEFAULT_NEBIUS_PLATFORMS,
  DEFAULT_NEBIUS_PROJECTS,
  DEFAULT_NEBIUS_TENANT_ID,
  type NebiusProjectSpec,
} from './nebius-emulator-data.js';
import { NebiusEmulatorFaults, parseNebiusFault } from './nebius-emulator-faults.js';
import { nebiusEmulatorPackageDefinition } from './nebius-emulator-protos.js';
import {
  DEFAULT_NEBIUS_EMULATOR_TIMELINE,
  type NebiusEmulator,
  type NebiusEmulatorOptions,
} from './nebius-emulator-types.js';
import { createNebiusIam } from './nebius-iam.js';
import { type NebiusMethods, type NebiusRequest, RpcError } from './nebius-rpc.js';

export async function startNebiusEmulator(options: NebiusEmulatorOptions = {}): Promise<NebiusEmulator> {
  const timeline = { ...DEFAULT_NEBIUS_EMULATOR_TIMELINE, ...options.timeline };
  const projects = options.projects ?? DEFAULT_NEBIUS_PROJECTS;
  const platforms = options.platforms ?? DEFAULT_NEBIUS_PLATFORMS;
  const fabrics = options.fabrics ?? DEFAULT_NEBIUS_FABRICS;
  const hosts = options.hosts;
  const lifetime = options.tokenLifetimeSeconds ?? 43_200;
  const faults = new NebiusEmulatorFaults();
  for (const fault of options.faults ?? []) faults.add(fault);
  const iam = createNebiusIam(lifetime, faults);
  const { serviceAccount } = iam;

  const subnetOf = (project: NebiusProjectSpec) => ({
    metadata: {
      id: `vpcsubnet-${project.id.slice(8)}`,
      parent_id: project.id,
      name: `default-subnet-${project.region}`,
    },
    spec: {},
    status: {},
  });
  const projectView = (project: NebiusProjectSpec) => ({
    metadata: { id: project.id, parent_id: DEFAULT_NEBIUS_TENANT_ID, name: project.name },
    spec: { region: project.region },
    status: { region: project.region, container_state: 'ACTIVE' },
  });

  function projectOf(parentId: unknown): NebiusProjectSpec {
    const project = projects.find((each) => each.id === parentId);
    if (!project) throw new RpcError(grpc.status.NOT_FOUND, `project ${String(parentId)} not found`);
    return project;
  }

  const compute = createNebiusCompute({
    timeline,
    platforms,
    fabrics,
    hosts,
    faults,
    serviceAccountId: serviceAccount.serviceAccountId,
    projectOf,
    subnetOf,
  });

  const handlers: Record<string, NebiusMethods> = {
    'nebius.iam.v1.TenantService': {
      List: () => ({
        items: [
          { metadata: { id: DEFAULT_NEBIUS_TENANT_ID, name: 'emulated-tenant' }, spec: {}, status: {} },
        ],
      }),
    },
    'nebius.iam.v1.ProjectService': {
      List: (request) => {
        if (request.parent_id !== DEFAULT_NEBIUS_TENANT_ID)
          throw new RpcError(grpc.status.NOT_FOUND, 'tenant not found');
        return { items: projects.map(projectView) };
      },
      Get: (request) => projectView(projectOf(request.id)),
    },
    'nebius.vpc.v1.SubnetService': {
      List: (request) => ({ items: [subnetOf(projectOf(request.parent_id))] }),
    },
    'nebius.compute.v1.PlatformService': {
      List: (request) => {
        projectOf(request.parent_id);
        return {
          items: platforms.map((platform) => ({
            metadata: {
              id: `computeplatform-${platform.name}`,
              parent_id: request.parent_id,
              name: platform.name,
            },
            spec: {
              human_readable_name: platform.humanName,
              gpu_memory_gigabytes: platform.gpuMemoryGb,
              presets: platform.presets.map((preset) => ({
                name: preset.name,
                resources: {
                  vcpu_count: preset.vcpu,
                  memory_gibibytes: preset.memoryGib,
                  gpu_count: preset.gpus,
                },
                allow_gpu_clustering: preset.clustering,
              })),
            },
            status: {
              allowed_for_preemptibles: platform.presets.every((preset) => preset.spotPrice !== null),
            },
          })),
        };
      },
    },
    'nebius.billing.v1alpha1.CalculatorService': {
      Estimate: (request) => {
        const spec = request.resource_spec?.compute_instance_spec?.spec;
        const preset = platforms
          .find((platform) => platform.name === spec?.resources?.platform)
          ?.presets.find((each) => each.name === spec?.resources?.preset);
        if (!preset) throw new RpcError(grpc.status.INVALID_ARGUMENT, 'unknown platform or preset');
        const price = spec.preemptible ? preset.spotPrice : preset.price;
        if (price === null)
          throw new RpcError(grpc.status.INVALID_ARGUMENT, 'the platform does not allow preemptibles');
        const cost = { cost: String(price), cost_rounded: price.toFixed(2) };
        return {
          hourly_cost: { general: { total: cost } },
          monthly_cost: {
            general: { total: { cost: String(price * 720), cost_rounded: (price * 720).toFixed(2) } },
          },
        };
      },
    },
    ...compute.services,
  };

  const definition = nebiusEmulatorPackageDefinition();
  const server = new grpc.Server();
  const serve = (
    service: string,
    methods: Record<string, (request: NebiusRequest) => unknown>,
    authenticated: boolean,
  ) => {
    const implementation: grpc.UntypedServiceImplementation = {};
    for (const [method, handle] of Object.entries(methods)) {
      implementation[method] = (
        call: grpc.ServerUnaryCall<NebiusRequest, unknown>,
        callback: grpc.sendUnaryData<unknown>,
      ) => {
        try {
          if (faults.fire('UNAVAILABLE')) throw new RpcError(grpc.status.UNAVAILABLE, 'service unavailable');
          if (authenticated) iam.authenticate(call);
          callback(null, handle(call.request));
        } catch (error) {
          if (error instanceof RpcError) callback({ code: error.code, details: error.message });
          else callback({ code: grpc.status.INTERNAL, details: String(error) });
        }
      };
    }
    server.addService(definition[service] as grpc.ServiceDefinition, implementation);
  };
  serve('nebius.iam.v1.TokenExchangeService', { Exchange: iam.exchange }, false);
  for (const [service, methods] of Object.entries(handlers)) serve(service, methods, true);

  const host = options.host ?? '127.0.0.1';
  const port = await new Promise<number>((resolve, reject) =>
    server.bindAsync(
      `${host}:${options.port ?? 0}`,
      grpc.ServerCredentials.createInsecure(),
      (error, bound) => (error ? reject(error) : resolve(bound)),
    ),
  );

  const state = compute.state;
  const control = await startEmulatorServer({
    host,
    routes: [
      ...emulatorControlRoutes({ state, faults, parseFault: parseNebiusFault }),
      {
        name: 'instances.preempt',
        method: 'POST',
        path: '/_emulator/instances/:id/preempt',
        handle: (request) => {
          try {
            const id = request.params.id ?? '';
            compute.preemptInstance(id);
            return json({ id, state: state().instances.find((each) => each.id === id)?.state });
          } catch (error) {
            throw controlError(error);
          }
        },
      },
    ],
  });

  return {
    url: control.url,
    apiUrl: `http://${host}:${port}`,
    serviceAccount,
    regions: [...new Set(projects.map((project) => project.region))],
    addFault: (fault) => faults.add(fault),
    removeFault: (id) => faults.remove(id),
    clearFaults: () => faults.clear(),
    faults: () => faults.list(),
    failNextLaunchWithNoCapacity: (count = 1) => {
      faults.add({ code: 'NO_CAPACITY', count });
    },
    removeInstance: (instanceId) => compute.removeInstance(instanceId),
    preemptInstance: (instanceId) => compute.preemptInstance(instanceId),
    launchedMachineCount: () => compute.launchedMachineCount(),
    state,
    async close() {
      await control.close();
      await new Promise<void>((resolve) => server.tryShutdown(() => resolve()));
      await compute.close();
    },
  };
}
