/** An upstream's answer headers under the sandbox: the policy always first, nothing origin-wide. */
import { describe, expect, it } from 'vitest';
import { SANDBOX_POLICY, withSandboxPolicy } from './origin-isolation.js';

describe('withSandboxPolicy', () => {
  it('adds the sandbox to an answer without a policy, keeping its other headers', () => {
    expect(withSandboxPolicy({ 'content-type': 'text/html', 'set-cookie': ['a=1', 'b=2'] })).toEqual({
      'content-type': 'text/html',
      'set-cookie': ['a=1', 'b=2'],
      'content-security-policy': SANDBOX_POLICY,
    });
  });

  it("keeps the upstream's own policies after the sandbox, whatever their case or number", () => {
    expect(
      withSandboxPolicy({ 'content-security-policy': "sandbox allow-same-origin; script-src 'self'" })[
        'content-security-policy'
      ],
    ).toBe(`${SANDBOX_POLICY}, sandbox allow-same-origin; script-src 'self'`);
    expect(
      withSandboxPolicy({ 'Content-Security-Policy': ["default-src 'self'", 'sandbox'] })[
        'content-security-policy'
      ],
    ).toBe(`${SANDBOX_POLICY}, default-src 'self', sandbox`);
  });

  it('drops headers that act on the whole origin', () => {
    const headers = withSandboxPolicy({
      'Clear-Site-Data': '"storage"',
      'service-worker-allowed': '/',
      etag: '"1"',
    });
    expect(Object.keys(headers).sort()).toEqual(['content-security-policy', 'etag']);
  });

  it('has no allow-same-origin nor top navigation in its sandbox', () => {
    expect(SANDBOX_POLICY.split(' ')[0]).toBe('sandbox');
    expect(SANDBOX_POLICY).not.toMatch(/allow-same-origin|allow-top-navigation|allow-storage-access/);
  });
});
