import { describe, expect, it } from 'vitest';
import { requestTargetRefusal } from './request-target.js';

describe('request targets a proxy passes on', () => {
  it('accepts a path with one leading slash, whatever follows it', () => {
    for (const target of ['/', '/v1/models?x=1', '/a//b', '/%2F%2Fhost/x', '/?next=//elsewhere']) {
      expect(requestTargetRefusal(target), target).toBeNull();
    }
  });

  it('refuses every form that names a host, or no path, quoting it', () => {
    for (const target of [
      'http://127.0.0.1:8000/api/state',
      'HTTP://127.0.0.1:8000/',
      '//127.0.0.1:8000/api/healthcheck',
      '/\\127.0.0.1:8000/api/healthcheck',
      '127.0.0.1:8000',
      '*',
      '',
      undefined,
    ]) {
      const refusal = requestTargetRefusal(target);
      expect(refusal, String(target)).toContain('must be a path that starts with a single "/"');
      expect(refusal).toContain(JSON.stringify(target ?? ''));
    }
  });

  it('quotes no more than the start of a long target', () => {
    const refusal = requestTargetRefusal(`//${'a'.repeat(10_000)}`) ?? '';
    expect(refusal.length).toBeLessThan(400);
  });
});
