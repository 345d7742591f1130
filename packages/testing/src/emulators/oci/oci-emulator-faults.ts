/**
 * Faults the OCI emulator injects on demand, from tests (`emulator.addFault`), over HTTP
 * (`POST /_emulator/faults`) and from the command line (`--fault CODE[:SHAPE]`), each answered
 * as OCI answers it: a launch with no host capacity is `500 InternalError` "Out of host
 * capacity." (and the capacity report says `OUT_OF_HOST_CAPACITY`), a service limit
 * `400 LimitExceeded`, a compartment quota `400 QuotaExceeded`, throttling `429 TooManyRequests`,
 * a deleted API key `401 NotAuthenticated` on every call.
 */
import { z } from 'zod';
import {
  type ActiveFault,
  EmulatorFaultList,
  parseFaultFlag,
  parseFaultWith,
} from '../emulator-fault-list.js';

export const OCI_FAULT_CODES = [
  /** LaunchInstance answers 500 InternalError "Out of host capacity."; capacity reports say OUT_OF_HOST_CAPACITY. */
  'OutOfHostCapacity',
  /** LaunchInstance answers 400 LimitExceeded (the tenancy's service limit of the shape). */
  'LimitExceeded',
  /** LaunchInstance answers 400 QuotaExceeded (a compartment quota policy). */
  'QuotaExceeded',
  /** Any call answers 429 TooManyRequests (`count` calls, or every `everyNth`). */
  'TooManyRequests',
  /** The API key is deleted: every call answers 401 NotAuthenticated. */
  'NotAuthenticated',
] as const;

export type OciFaultCode = (typeof OCI_FAULT_CODES)[number];

const ociFaultSchema = z
  .object({
    code: z.enum(OCI_FAULT_CODES),
    /** Only launches of this shape (e.g. `VM.GPU.A10.1`); every shape when absent. */
    shape: z.string().min(1).optional(),
    /** Only this region (e.g. `us-ashburn-1`). */
    region: z.string().min(1).optional(),
    /** Only preemptible (true) or only on-demand (false) launches. */
    preemptible: z.boolean().optional(),
    count: z.number().int().positive().optional(),
    everyNth: z.number().int().min(2).optional(),
  })
  .strict();

export type OciFault = z.infer<typeof ociFaultSchema>;
export type ActiveOciFault = ActiveFault<OciFault>;

/** Validates a fault given over HTTP or by a test; the error names the bad field. */
export function parseOciFault(input: unknown): OciFault {
  return parseFaultWith(ociFaultSchema, 'OCI', input);
}

/** `CODE[:SHAPE]` from the command line. */
export function parseOciFaultFlag(flag: string): OciFault {
  return parseFaultFlag(flag, {
    codes: OCI_FAULT_CODES,
    typeField: 'shape',
    typeName: 'SHAPE',
    throttleCode: 'TooManyRequests',
    parse: parseOciFault,
  });
}

/** What a launch is, for matching faults. */
export interface OciLaunchTarget {
  readonly shape: string;
  readonly region: string;
  readonly preemptible: boolean;
}

export class OciEmulatorFaults extends EmulatorFaultList<OciFault, ActiveOciFault> {
  constructor() {
    super((fault, id) => ({ ...parseOciFault(fault), id, fired: 0, seen: 0 }));
  }

  has(code: OciFaultCode): boolean {
    return this.faults.some((fault) => fault.code === code);
  }

  #matching(code: OciFaultCode, target?: Partial<OciLaunchTarget>, lasting = false) {
    return this.faults.find(
      (each) =>
        each.code === code &&
        (!lasting || each.count === undefined) &&
        (target === undefined ||
          ((each.shape === undefined || each.shape === target.shape) &&
            (each.region === undefined || each.region === target.region) &&
            (each.preemptible === undefined ||
              target.preemptible === undefined ||
              each.preemptible === target.preemptible))),
    );
  }

  /** Whether a fault of `code` (`lasting`: one without `count`) applies to `target`, without counting a request. */
  applies(
    code: OciFaultCode,
    target: Partial<OciLaunchTarget>,
    options: { lasting?: boolean } = {},
  ): boolean {
    return this.#matching(code, target, options.lasting) !== undefined;
  }

  /** Counts a request against the first fault of `code` matching `target`; true when it fires. */
  fire(code: OciFaultCode, target?: OciLaunchTarget): boolean {
    const fault = this.#matching(code, target);
    return fault !== undefined && this.countRequest(fault);
  }
}
