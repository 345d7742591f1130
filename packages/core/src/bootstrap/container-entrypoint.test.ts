import { execFileSync } from 'node:child_process';
import { describe, expect, it } from 'vitest';
import { VERSION } from '../version.js';
import { buildContainerEntrypoint, runnerRuntimeTarballUrl } from './container-entrypoint.js';

const KEY = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIO2n4bX3Jt1Q0oYJm6Gx5mC1kGQJ3Yx0eQm1xq6vW3nS it's me";

describe('buildContainerEntrypoint', () => {
  it('is a valid sh script that fetches the runtime and execs the runner with its SSH port and keys', () => {
    const script = buildContainerEntrypoint({
      runtimeDownloadUrl: 'http://10.0.0.1:8080/runtime.tar.gz',
      sshAuthorizedKeys: [KEY, '  '],
    });

    // `sh -n` parses without running: the quoting of the key's apostrophe holds.
    expect(() => execFileSync('sh', ['-n', '-c', script])).not.toThrow();
    expect(script).toContain("url='http://10.0.0.1:8080/runtime.tar.gz'");
    expect(script).toContain(`--ssh-authorized-key '${KEY.replace("'", "'\\''")}'`);
    expect(script.match(/--ssh-authorized-key/g)).toHaveLength(1);
    expect(script).toMatch(/start --home \S+ --http-port 10999 --ssh-port 10022/);
  });

  it('refuses a download location that is not an http(s) URL, naming the option', () => {
    expect(() =>
      buildContainerEntrypoint({ runtimeDownloadUrl: 'file:///x', sshAuthorizedKeys: [] }),
    ).toThrow(/runtimeDownloadUrl/);
  });

  it('downloads the published runtime package of this release by default', () => {
    const script = buildContainerEntrypoint({ sshAuthorizedKeys: [KEY] });
    expect(script).toContain(`url='${runnerRuntimeTarballUrl(VERSION)}'`);
    expect(runnerRuntimeTarballUrl('1.2.3')).toBe(
      'https://registry.npmjs.org/@dstack/runner-runtime-linux-x64/-/runner-runtime-linux-x64-1.2.3.tgz',
    );
  });
});
