import { AGENT_BOOTSTRAP_FAILURE_MARKER, VM_SHIM_LOG } from '@dstack/core';
import { describe, expect, it } from 'vitest';
import { bootstrapFailureIn } from './bootstrap-log.js';

describe('bootstrapFailureIn', () => {
  it('is null while the bootstrap has not given up', () => {
    expect(bootstrapFailureIn('')).toBeNull();
    expect(bootstrapFailureIn('dstack-shim: runtime auto: no Docker\nlistening on 10998\n')).toBeNull();
  });

  it('names the cause from the marker line and quotes the lines', () => {
    const tail = [
      'wget: server returned error: HTTP/1.1 503 Service Unavailable',
      `${AGENT_BOOTSTRAP_FAILURE_MARKER} cannot download the agent runtime from http://m/r.tgz (10 tries)`,
      '',
    ].join('\n');
    expect(bootstrapFailureIn(tail)).toBe(
      "the instance's bootstrap failed: cannot download the agent runtime from http://m/r.tgz (10 tries). " +
        `The end of ${VM_SHIM_LOG}:\n${tail.trimEnd()}`,
    );
  });
});
