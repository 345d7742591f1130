import { setTimeout as sleep } from 'node:timers/promises';
import {
  type Compute,
  InvalidCredentialsError,
  type JobProvisioningData,
  JobProvisioningDataSchema,
  NoCapacityError,
  NotYetTerminatedError,
  type ProjectSshKeys,
} from '@dstack/core';
import { agentHealthcheck } from '../emulator/boot-local-agent.js';
import { ConformanceViolation, show } from './conformance-violation.js';
import type { EmulatedAgentAddress } from './test-backend-options.js';

/** `error` is an `InvalidCredentialsError` whose `fields` include `field`. */
export function checkInvalidCredentialsError(error: unknown, field: readonly string[]): void {
  const rule = `invalid credentials are rejected with InvalidCredentialsError naming ${field.join('.')}`;
  if (error === undefined) throw new ConformanceViolation(rule, 'validateConfig accepted the config');
  if (!InvalidCredentialsError.isInstance(error)) {
    throw new ConformanceViolation(rule, `validateConfig threw ${show(error)}`, { cause: error });
  }
  const wanted = field.join('.');
  const named = error.fields.map((path) => path.join('.'));
  if (!named.includes(wanted)) {
    throw new ConformanceViolation(rule, `the error names ${named.join(', ') || 'no field'}`, {
      cause: error,
    });
  }
}

/** `error` is a `NoCapacityError` (the server's "try the next offer"). */
export function checkNoCapacityError(error: unknown, method: string): void {
  const rule = `a provider capacity error from ${method} is a NoCapacityError`;
  if (error === undefined)
    throw new ConformanceViolation(rule, `${method} succeeded despite the capacity fault`);
  if (!NoCapacityError.isInstance(error)) {
    throw new ConformanceViolation(rule, `${method} threw ${show(error)}`, { cause: error });
  }
}

/** `data` parses as `JobProvisioningData` of `backendType`. */
export function checkProvisioningData(
  data: unknown,
  backendType: string,
  method: string,
): JobProvisioningData {
  const rule = `${method} returns well-formed provisioning data`;
  const parsed = JobProvisioningDataSchema.safeParse(data);
  if (!parsed.success) {
    const issues = parsed.error.issues.map(
      (issue) => `${issue.path.join('.') || '(root)'}: ${issue.message}`,
    );
    throw new ConformanceViolation(rule, `${issues.join('; ')} in ${show(data)}`);
  }
  if (parsed.data.backend !== backendType) {
    throw new ConformanceViolation(rule, `backend is "${parsed.data.backend}", expected "${backendType}"`);
  }
  return parsed.data;
}

export interface PollOptions {
  maxAttempts: number;
  intervalMs: number;
}

/**
 * Calls `updateProvisioningData` as the server does until `hostname` is set;
 * fails after `maxAttempts` calls. Each answer must keep the instance id.
 */
export async function pollUntilHostname(
  compute: Pick<Compute, 'updateProvisioningData' | 'type'>,
  initial: JobProvisioningData,
  keys: ProjectSshKeys,
  options: PollOptions,
): Promise<JobProvisioningData> {
  const rule = 'updateProvisioningData fills hostname once the instance is up';
  let current = initial;
  for (let attempt = 1; current.hostname == null; attempt++) {
    if (attempt > options.maxAttempts) {
      throw new ConformanceViolation(rule, `hostname still unset after ${options.maxAttempts} calls`);
    }
    if (attempt > 1) await sleep(options.intervalMs);
    const next = checkProvisioningData(
      await compute.updateProvisioningData(current, keys),
      compute.type,
      'updateProvisioningData',
    );
    if (next.instance_id !== initial.instance_id) {
      throw new ConformanceViolation(
        rule,
        `instance_id changed from "${initial.instance_id}" to "${next.instance_id}"`,
      );
    }
    current = next;
  }
  return current;
}

const LOOPBACK_HOSTS = new Set(['127.0.0.1', '::1', 'localhost']);

/**
 * The agent the provisioning data points at, when it is on this machine:
 * a loopback `hostname` with `agent_ports.shim` (vm) or `agent_ports.runner`
 * (container) in `backend_data`. Undefined otherwise.
 */
export function localAgentOf(
  data: JobProvisioningData,
  kind: 'vm' | 'container',
): EmulatedAgentAddress | undefined {
  if (data.hostname == null || !LOOPBACK_HOSTS.has(data.hostname)) return undefined;
  let backendData: unknown;
  try {
    backendData = JSON.parse(data.backend_data ?? 'null');
  } catch {
    return undefined;
  }
  const ports = (backendData as { agent_ports?: { shim?: unknown; runner?: unknown } } | null)?.agent_ports;
  const port = kind === 'vm' ? ports?.shim : ports?.runner;
  if (!Number.isInteger(port)) return undefined;
  const host = data.hostname.includes(':') ? `[${data.hostname}]` : data.hostname;
  return { kind, url: `http://${host}:${port}` };
}

/** The agent answers its healthcheck as the expected service. */
export async function checkAgentAnswers(address: EmulatedAgentAddress): Promise<void> {
  const rule = 'the agent booted for the instance answers its healthcheck';
  const expected = address.kind === 'vm' ? 'dstack-shim' : 'dstack-runner';
  let answer: { service: string };
  try {
    answer = await agentHealthcheck(address);
  } catch (error) {
    throw new ConformanceViolation(rule, `${address.url} did not answer: ${show(error)}`, { cause: error });
  }
  if (answer.service !== expected) {
    throw new ConformanceViolation(rule, `${address.url} is "${answer.service}", expected "${expected}"`);
  }
}

/** A request no agent answers without its token: the shim's task list, the runner's state and logs. */
const PROTECTED_PATHS = { vm: '/api/tasks', container: '/api/pull?timestamp=0' } as const;

/**
 * The agent requires the token the launch handed to the backend: a request without it gets
 * 401, with it 200. A backend that drops the token (or passes it where the agent does not read
 * it) leaves an agent anyone on the host can drive, or one the server cannot reach.
 */
export async function checkAgentRequiresToken(address: EmulatedAgentAddress, token: string): Promise<void> {
  const rule = "the agent booted for the instance requires the launch's agent token";
  const url = `${address.url}${PROTECTED_PATHS[address.kind]}`;
  const statusWith = async (headers: Record<string, string>) => {
    try {
      const response = await fetch(url, { headers });
      await response.body?.cancel();
      return response.status;
    } catch (error) {
      throw new ConformanceViolation(rule, `${url} did not answer: ${show(error)}`, { cause: error });
    }
  };
  const without = await statusWith({});
  if (without !== 401) {
    throw new ConformanceViolation(
      rule,
      `${url} answered ${without} without the token: pass InstanceConfiguration.agent_token / RunJobParams.agentToken to the agent`,
    );
  }
  const withToken = await statusWith({ authorization: `Bearer ${token}` });
  if (withToken !== 200) {
    throw new ConformanceViolation(rule, `${url} answered ${withToken} with the launch's token`);
  }
}

/**
 * `terminate` succeeds every time it is called (`times` calls, one after
 * another). `NotYetTerminatedError` is the contract's "call me again later":
 * the call is repeated, up to `maxAttempts` times.
 */
export async function checkTerminateSucceeds(
  terminate: () => Promise<void>,
  what: string,
  times: number,
  options: PollOptions = { maxAttempts: 1, intervalMs: 0 },
): Promise<void> {
  for (let call = 1; call <= times; call++) {
    try {
      for (let attempt = 1; ; attempt++) {
        try {
          await terminate();
          break;
        } catch (error) {
          if (!NotYetTerminatedError.isInstance(error) || attempt >= options.maxAttempts) throw error;
          await sleep(options.intervalMs);
        }
      }
    } catch (error) {
      throw new ConformanceViolation(
        `terminateInstance is idempotent (${what})`,
        `call ${call} of ${times} threw ${show(error)}`,
        { cause: error },
      );
    }
  }
}
