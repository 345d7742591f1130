/**
 * Resource policies of the emulated project (`regions/{r}/resourcePolicies`), as dstack uses them
 * for cluster fleets: a group placement policy `{collocation: COLLOCATED}` (compact placement) that
 * instances name in `resourcePolicies` at insert. Compute's rules the emulator keeps: a name is
 * unique in its region (409), a policy instances use cannot be deleted (400
 * `resourceInUseByAnotherResource`, the message dstack matches: "is already being used by"), an
 * instance names policies of its own region only, and every instance of a compact policy is in one
 * zone. Inserts and deletes answer region operations that are DONE at once (dstack waits on them).
 */
import { alreadyExists, GcpApiError, invalidField, notFound } from './gcp-api-error.js';
import type { GcpInstance, GcpInstances } from './gcp-compute-instances.js';
import { lastSegment, link, rfc3339 } from './gcp-compute-resources.js';
import { regionOfZone } from './gcp-emulator-data.js';

export interface GcpResourcePolicy {
  readonly id: string;
  readonly name: string;
  readonly region: string;
  readonly collocation: 'COLLOCATED' | 'UNSPECIFIED_COLLOCATION';
  readonly availabilityDomainCount: number | undefined;
  readonly vmCount: number | undefined;
  readonly description: string | undefined;
  readonly createdAt: number;
}

/** One policy as `/_emulator/state` lists it, with the instances that use it. */
export interface GcpResourcePolicyState {
  readonly name: string;
  readonly region: string;
  readonly collocation: string;
  readonly instances: readonly string[];
}

const COLLOCATIONS = new Set(['COLLOCATED', 'UNSPECIFIED_COLLOCATION']);

export class GcpResourcePolicies {
  readonly #policies = new Map<string, GcpResourcePolicy>();
  readonly #operations = new Map<string, Record<string, unknown>>();
  #sequence = 0;

  constructor(
    readonly project: string,
    readonly regions: readonly string[],
    readonly instances: GcpInstances,
    readonly clock: () => number,
  ) {}

  #key(region: string, name: string): string {
    return `${region}/${name}`;
  }

  #path(region: string, name: string): string {
    return `projects/${this.project}/regions/${region}/resourcePolicies/${name}`;
  }

  find(region: string, name: string): GcpResourcePolicy | undefined {
    return this.#policies.get(this.#key(region, name));
  }

  listIn(region: string): GcpResourcePolicy[] {
    return [...this.#policies.values()].filter((each) => each.region === region);
  }

  /** The instances that name the policy, until they are deleted (a stopping one still uses it). */
  usersOf(policy: GcpResourcePolicy): GcpInstance[] {
    return this.instances.all().filter((instance) => {
      const status = this.instances.status(instance);
      if (status === undefined || (instance.stopReason === 'deleted' && status === 'TERMINATED'))
        return false;
      return policyLinksOf(instance.body).some(
        (reference) =>
          this.#parseReference(reference)?.name === policy.name &&
          regionOfZone(instance.zone) === policy.region,
      );
    });
  }

  insert(region: string, body: Record<string, unknown>, name: string): Record<string, unknown> {
    if (this.find(region, name)) throw alreadyExists(this.#path(region, name));
    const placement = body.groupPlacementPolicy as Record<string, unknown> | undefined;
    if (placement === undefined || typeof placement !== 'object') {
      // dstack's only use; other policy kinds (snapshot schedules, instance schedules) are not modelled.
      throw invalidField(
        'resource.groupPlacementPolicy',
        'the emulator models group placement policies only; set groupPlacementPolicy',
      );
    }
    const collocation = String(placement.collocation ?? 'UNSPECIFIED_COLLOCATION');
    if (!COLLOCATIONS.has(collocation)) {
      throw invalidField('resource.groupPlacementPolicy.collocation', `'${collocation}'`);
    }
    const count = (field: string): number | undefined => {
      const value = placement[field];
      if (value === undefined) return undefined;
      const number = Number(value);
      if (!Number.isInteger(number) || number < 1)
        throw invalidField(`resource.groupPlacementPolicy.${field}`, `'${String(value)}'`);
      return number;
    };
    const now = this.clock();
    this.#sequence += 1;
    const policy: GcpResourcePolicy = {
      id: String(5_000_000_000_000_000_000n + BigInt(this.#sequence) * 7_927n),
      name,
      region,
      collocation: collocation as GcpResourcePolicy['collocation'],
      availabilityDomainCount: count('availabilityDomainCount'),
      vmCount: count('vmCount'),
      description: typeof body.description === 'string' ? body.description : undefined,
      createdAt: now,
    };
    this.#policies.set(this.#key(region, name), policy);
    return this.#operation(region, 'insert', policy);
  }

  delete(region: string, name: string): Record<string, unknown> {
    const policy = this.find(region, name);
    if (!policy) throw notFound(this.#path(region, name));
    const [user] = this.usersOf(policy);
    if (user) {
      throw new GcpApiError(
        400,
        'resourceInUseByAnotherResource',
        `The resource_policy resource '${this.#path(region, name)}' is already being used by 'projects/${this.project}/zones/${user.zone}/instances/${user.name}'`,
      );
    }
    this.#policies.delete(this.#key(region, name));
    return this.#operation(region, 'delete', policy);
  }

  operation(region: string, name: string): Record<string, unknown> | undefined {
    const operation = this.#operations.get(name);
    return operation && operation.region === link(`projects/${this.project}/regions/${region}`)
      ? operation
      : undefined;
  }

  resource(policy: GcpResourcePolicy): Record<string, unknown> {
    return {
      kind: 'compute#resourcePolicy',
      id: policy.id,
      creationTimestamp: rfc3339(policy.createdAt),
      selfLink: link(this.#path(policy.region, policy.name)),
      region: link(`projects/${this.project}/regions/${policy.region}`),
      name: policy.name,
      ...(policy.description !== undefined ? { description: policy.description } : {}),
      groupPlacementPolicy: {
        collocation: policy.collocation,
        ...(policy.availabilityDomainCount !== undefined
          ? { availabilityDomainCount: policy.availabilityDomainCount }
          : {}),
        ...(policy.vmCount !== undefined ? { vmCount: policy.vmCount } : {}),
      },
      status: 'READY',
    };
  }

  /**
   * The policies an instance insert names, checked as Compute does: each exists in the instance's
   * region, and a compact policy's instances are all in one zone. Returns their names.
   */
  checkInsert(zone: string, body: Readonly<Record<string, unknown>>): string[] {
    const region = regionOfZone(zone);
    return policyLinksOf(body).map((reference, index) => {
      const field = `resource.resourcePolicies[${index}]`;
      const parsed = this.#parseReference(reference);
      if (!parsed) throw invalidField(field, `'${reference}'. Not a resource policy reference.`);
      if (parsed.region !== undefined && parsed.region !== region) {
        throw invalidField(
          field,
          `'${reference}'. Resource policy must be in the same region as the instance ('${region}').`,
        );
      }
      const policy = this.find(region, parsed.name);
      if (!policy) {
        throw invalidField(
          field,
          `'${reference}'. The resource '${this.#path(region, parsed.name)}' was not found`,
        );
      }
      if (policy.collocation === 'COLLOCATED') {
        const elsewhere = this.usersOf(policy).find((user) => user.zone !== zone);
        if (elsewhere) {
          throw invalidField(
            field,
            `'${reference}'. Instances of a compact placement policy must be in one zone: '${elsewhere.name}' is in '${elsewhere.zone}', not '${zone}'.`,
          );
        }
      }
      return policy.name;
    });
  }

  state(): GcpResourcePolicyState[] {
    return [...this.#policies.values()].map((policy) => ({
      name: policy.name,
      region: policy.region,
      collocation: policy.collocation,
      instances: this.usersOf(policy).map((each) => each.name),
    }));
  }

  /** `projects/P/regions/R/resourcePolicies/N` (a full link or relative), or a bare name. */
  #parseReference(reference: string): { region: string | undefined; name: string } | undefined {
    const match = /(?:^|\/)regions\/([^/]+)\/resourcePolicies\/([^/]+)$/.exec(reference);
    if (match) return { region: match[1] as string, name: match[2] as string };
    return reference.includes('/') || reference === ''
      ? undefined
      : { region: undefined, name: lastSegment(reference) };
  }

  #operation(region: string, type: 'insert' | 'delete', policy: GcpResourcePolicy): Record<string, unknown> {
    const now = this.clock();
    this.#sequence += 1;
    const name = `operation-${now}-${this.#sequence.toString(16).padStart(13, '0')}-policy`;
    const regionPath = `projects/${this.project}/regions/${region}`;
    const operation = {
      kind: 'compute#operation',
      id: String(9_000_000_000 + this.#sequence),
      name,
      operationType: type,
      targetLink: link(this.#path(region, policy.name)),
      targetId: policy.id,
      status: 'DONE',
      progress: 100,
      user: 'dstack@emulator',
      insertTime: rfc3339(now),
      startTime: rfc3339(now),
      endTime: rfc3339(now),
      region: link(regionPath),
      selfLink: link(`${regionPath}/operations/${name}`),
    };
    this.#operations.set(name, operation);
    return operation;
  }
}

/** The `resourcePolicies` an insert body names. */
export function policyLinksOf(body: Readonly<Record<string, unknown>>): string[] {
  const policies = body.resourcePolicies;
  return Array.isArray(policies) ? policies.map(String) : [];
}
