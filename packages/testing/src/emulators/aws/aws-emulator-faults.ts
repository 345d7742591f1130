/**
 * Faults the AWS emulator injects on demand, from tests (`emulator.addFault`), over HTTP
 * (`POST /_emulator/faults`) and from the command line (`--fault CODE[:INSTANCE_TYPE]`).
 * Launch faults are sticky per (type, zone, market), as a real capacity shortage is: the SDK
 * retries a 500 three times and must see it every time.
 */
import { z } from 'zod';
import {
  type ActiveFault,
  EmulatorFaultList,
  parseFaultFlag,
  parseFaultWith,
} from '../emulator-fault-list.js';

export const AWS_FAULT_CODES = [
  /** RunInstances answers 500 InsufficientInstanceCapacity (per type / zone / market). */
  'InsufficientInstanceCapacity',
  /** RunInstances answers 400 Unsupported: the type is not offered in the zone. */
  'Unsupported',
  /** The on-demand vCPU quota of the type's class (every class without a type) is 0: Service Quotas says 0 and RunInstances answers VcpuLimitExceeded. */
  'VcpuLimitExceeded',
  /** The same for spot: the spot vCPU quota is 0 and RunInstances answers MaxSpotInstanceCountExceeded. */
  'MaxSpotInstanceCountExceeded',
  /** EC2 answers 503 RequestLimitExceeded (`count` requests, or every `everyNth` request; every request when neither is given). */
  'RequestLimitExceeded',
  /** The emulator's own access key is rejected by every service (AuthFailure, InvalidClientTokenId…). */
  'AuthFailure',
  /** The public IP of a new instance appears `delayMs` after it is running. */
  'SlowPublicIp',
  /** A running spot instance is taken back `afterRunningMs` after it started running. */
  'SpotInterruption',
  /** An EC2 action (`action`) answers 500 InternalError; with `afterAction` it runs first and only the answer is lost. */
  'InternalError',
  /**
   * The connection of an EC2 action (`action`) is dropped without an answer; with `afterAction`
   * the action runs first (the client cannot tell which).
   */
  'ConnectionReset',
  /**
   * An EC2 action (`action`) runs and its answer is held back `delayMs` (until the emulator
   * closes when absent): the window in which a client that dies never learns what EC2 did.
   */
  'AnswerHeld',
] as const;

export type AwsFaultCode = (typeof AWS_FAULT_CODES)[number];

const awsFaultSchema = z
  .object({
    code: z.enum(AWS_FAULT_CODES),
    /** Only launches of this instance type; every type when absent. */
    instanceType: z.string().min(1).optional(),
    /** Only launches in this availability zone (name, e.g. `us-east-1a`). */
    zone: z.string().min(1).optional(),
    /** Only this market. */
    market: z.enum(['on-demand', 'spot']).optional(),
    /** InsufficientInstanceCapacity: only launches into this placement group (its name). */
    placementGroup: z.string().min(1).optional(),
    /** RequestLimitExceeded / InternalError / ConnectionReset / AnswerHeld: only this EC2 action, e.g. `RunInstances`. */
    action: z.string().min(1).optional(),
    /** How many times the fault fires before it is removed; it stays until cleared when absent. */
    count: z.number().int().positive().optional(),
    /**
     * Launch faults: how many launches it fails before it is removed, a launch being every
     * RunInstances request with one ClientToken (its SDK retries and the zones a backend tries).
     */
    launches: z.number().int().positive().optional(),
    /** RequestLimitExceeded: throttle one request of every `everyNth` (2 = every other one). */
    everyNth: z.number().int().min(2).optional(),
    /** SlowPublicIp: how late the IP appears (default 5000). AnswerHeld: how long the answer waits. */
    delayMs: z.number().int().nonnegative().optional(),
    /** SpotInterruption: how long a spot instance runs before it is taken back. Default 5000. */
    afterRunningMs: z.number().int().nonnegative().optional(),
    /** InternalError / ConnectionReset: run the action, then answer 500 or drop the connection. */
    afterAction: z.boolean().optional(),
  })
  .strict();

export type AwsFault = z.infer<typeof awsFaultSchema>;

/** An active fault with its id (to remove it) and how often it fired. */
export interface ActiveAwsFault extends ActiveFault<AwsFault> {
  /** The ClientTokens of the launches it failed (for `launches`). */
  readonly clientTokens: Set<string>;
}

/** Validates a fault given over HTTP or by a test; the error names the bad field. */
export function parseAwsFault(input: unknown): AwsFault {
  return parseFaultWith(awsFaultSchema, 'AWS', input);
}

/**
 * `CODE[:INSTANCE_TYPE]` from the command line, e.g. `InsufficientInstanceCapacity:g5.xlarge`.
 * RequestLimitExceeded from the command line throttles every other request, so a client that
 * retries (as the SDK does) still gets through.
 */
export function parseAwsFaultFlag(flag: string): AwsFault {
  return parseFaultFlag(flag, {
    codes: AWS_FAULT_CODES,
    typeField: 'instanceType',
    typeName: 'INSTANCE_TYPE',
    throttleCode: 'RequestLimitExceeded',
    parse: parseAwsFault,
  });
}

/** What a launch looks like to the faults that may hit it. */
export interface LaunchTarget {
  readonly instanceType: string;
  readonly zone: string;
  readonly market: 'on-demand' | 'spot';
  /** The placement group the launch asks for, if any. */
  readonly placementGroup: string | undefined;
}

export class AwsEmulatorFaults extends EmulatorFaultList<AwsFault, ActiveAwsFault> {
  constructor() {
    super((fault, id) => ({
      ...parseAwsFault(fault),
      id,
      fired: 0,
      seen: 0,
      clientTokens: new Set<string>(),
    }));
  }

  /** Whether a fault with `code` applies to `target` (not consumed: quota faults are states). */
  has(code: AwsFaultCode, target: Partial<LaunchTarget> = {}): ActiveAwsFault | undefined {
    return this.faults.find((fault) => fault.code === code && matchesTarget(fault, target));
  }

  /** The first fault with `code` that applies, counted as fired (and removed once its count is used). */
  fire(
    code: AwsFaultCode,
    target: Partial<LaunchTarget> & { action?: string; clientToken?: string } = {},
  ): ActiveAwsFault | undefined {
    for (const fault of [...this.faults]) {
      if (fault.code !== code || !matchesTarget(fault, target)) continue;
      if (fault.action !== undefined && fault.action !== target.action) continue;
      if (fault.launches !== undefined) {
        const token = target.clientToken ?? `untokened-${fault.fired}`;
        if (!fault.clientTokens.has(token)) {
          if (fault.clientTokens.size >= fault.launches) {
            this.remove(fault.id);
            continue;
          }
          fault.clientTokens.add(token);
        }
      }
      if (this.countRequest(fault)) return fault;
    }
    return undefined;
  }
}

function matchesTarget(fault: AwsFault, target: Partial<LaunchTarget>): boolean {
  if (fault.instanceType !== undefined && fault.instanceType !== target.instanceType) return false;
  if (fault.zone !== undefined && fault.zone !== target.zone) return false;
  if (fault.market !== undefined && fault.market !== target.market) return false;
  if (fault.placementGroup !== undefined && fault.placementGroup !== target.placementGroup) return false;
  return true;
}
