/**
 * What the cloud emulators' faults share: validating a fault (from a test or over HTTP) and a
 * `--fault CODE[:TYPE]` flag, and the list of active faults with their ids and counters. Each
 * emulator adds which requests a fault applies to.
 */
import type { z } from 'zod';

/** The fields every emulator's fault has, whatever its targets. */
export interface CountedFault {
  readonly code: string;
  /** How many times it fires before it is removed; it stays until cleared when absent. */
  readonly count?: number;
  /** Fire on one request of every `everyNth` (2 = every other one). */
  readonly everyNth?: number;
}

/** An active fault: its id (to remove it) and how often it fired. */
export type ActiveFault<Fault> = Fault & {
  readonly id: string;
  fired: number;
  /** Requests the fault saw (for `everyNth`). */
  seen: number;
};

/** Validates a fault with `schema`; the error names the provider and the bad field. */
export function parseFaultWith<Fault>(schema: z.ZodType<Fault>, provider: string, input: unknown): Fault {
  const result = schema.safeParse(input);
  if (result.success) return result.data;
  const issue = result.error.issues[0];
  const path = issue?.path.join('.') || 'fault';
  throw new Error(`Invalid ${provider} emulator fault: ${path}: ${issue?.message ?? 'invalid'}`);
}

/** How a provider reads `--fault CODE[:TYPE]`. */
export interface FaultFlagSyntax<Fault> {
  readonly codes: readonly string[];
  /** The fault's field the `TYPE` part sets, and its name in the usage (e.g. `instanceType`, `INSTANCE_TYPE`). */
  readonly typeField: string;
  readonly typeName: string;
  /** The throttling code: from the command line it fires on every other request, so a retrying client gets through. */
  readonly throttleCode: string;
  readonly parse: (input: unknown) => Fault;
}

/** `CODE[:TYPE]` from the command line; the error names the flag. */
export function parseFaultFlag<Fault>(flag: string, syntax: FaultFlagSyntax<Fault>): Fault {
  const [code, type, ...rest] = flag.split(':');
  if (rest.length > 0 || !code) {
    throw new Error(`--fault ${JSON.stringify(flag)}: expected CODE[:${syntax.typeName}]`);
  }
  if (!syntax.codes.includes(code)) {
    throw new Error(
      `--fault ${JSON.stringify(flag)}: unknown code ${code}; known: ${syntax.codes.join(', ')}`,
    );
  }
  return syntax.parse({
    code,
    ...(type ? { [syntax.typeField]: type } : {}),
    ...(code === syntax.throttleCode ? { everyNth: 2 } : {}),
  });
}

/** The active faults of one emulator, in the order they were added. */
export class EmulatorFaultList<Fault extends CountedFault, Active extends ActiveFault<Fault>> {
  protected readonly faults: Active[] = [];
  #sequence = 0;

  /** `activate` validates the fault and gives it the provider's own counters. */
  constructor(private readonly activate: (fault: Fault, id: string) => Active) {}

  add(fault: Fault): Active {
    this.#sequence += 1;
    const active = this.activate(fault, `fault-${this.#sequence}`);
    this.faults.push(active);
    return active;
  }

  remove(id: string): boolean {
    const index = this.faults.findIndex((fault) => fault.id === id);
    if (index === -1) return false;
    this.faults.splice(index, 1);
    return true;
  }

  clear(): void {
    this.faults.length = 0;
  }

  list(): readonly Active[] {
    return [...this.faults];
  }

  /**
   * Counts a request `fault` applies to: whether it fires this time (`everyNth`), removing it
   * once its `count` is used.
   */
  protected countRequest(fault: Active): boolean {
    fault.seen += 1;
    if (fault.everyNth !== undefined && fault.seen % fault.everyNth !== 0) return false;
    fault.fired += 1;
    if (fault.count !== undefined && fault.fired >= fault.count) this.remove(fault.id);
    return true;
  }
}
