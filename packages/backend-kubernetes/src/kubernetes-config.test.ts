import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import plugin, { type KubernetesBackendConfigWithCreds } from './index.js';
import { clustersOf } from './kubeconfig.js';
import { kubernetesConfigModels } from './kubernetes-config.js';
import { parseKubernetesBackendConfig } from './kubernetes-configurator.js';

const KUBECONFIG = `apiVersion: v1
kind: Config
current-context: main
clusters:
  - name: one
    cluster:
      server: https://127.0.0.1:6443/
      certificate-authority-data: ${Buffer.from('CA PEM').toString('base64')}
  - name: two
    cluster: {server: https://10.0.0.2:6443, insecure-skip-tls-verify: true}
users:
  - name: admin
    user:
      client-certificate-data: ${Buffer.from('CERT PEM').toString('base64')}
      client-key-data: ${Buffer.from('KEY PEM').toString('base64')}
  - name: robot
    user: {token: secret-token}
  - name: plugin
    user: {exec: {command: aws}}
contexts:
  - name: main
    context: {cluster: one, user: admin}
  - name: gpu
    context: {cluster: two, user: robot, namespace: ml}
  - name: eks
    context: {cluster: two, user: plugin}
`;

/** A config as users write it (`kubeconfig:`), which the schema turns into the typed one. */
const asWritten = (value: unknown) => value as KubernetesBackendConfigWithCreds;

const record = (stored: { config: string; auth: string }) => ({ ...stored, projectId: 'p', backendId: 'b' });

describe('kubernetes config models', () => {
  it("takes dstack's top-level kubeconfig and keeps it as the creds", () => {
    const parsed = parseKubernetesBackendConfig({
      type: 'kubernetes',
      kubeconfig: { data: KUBECONFIG },
      proxy_jump: { hostname: '203.0.113.7', port: 32000 },
      namespace: 'dstack',
    });

    expect(parsed.creds).toEqual({ type: 'kubeconfig', data: KUBECONFIG });
    expect(parsed.proxy_jump).toEqual({ hostname: '203.0.113.7', port: 32000 });
  });

  it('names the field it rejects, as the user wrote it', () => {
    const rejects = (config: Record<string, unknown>, fields: string[][]) =>
      expect(() => parseKubernetesBackendConfig({ type: 'kubernetes', ...config })).toThrow(
        expect.objectContaining({ fields }),
      );

    rejects({}, [['kubeconfig']]);
    rejects({ kubeconfig: { data: 1 } }, [['kubeconfig', 'data']]);
    rejects({ kubeconfig: { data: 'x' }, proxy_jump: { port: 0 } }, [['proxy_jump', 'port']]);
    expect(() =>
      parseKubernetesBackendConfig({ type: 'kubernetes', kubeconfig: { data: 'x' }, namespaces: 'a' }),
    ).toThrow(/namespaces/);
  });

  it('stores a kubeconfig given by filename as its data, creds apart from the config', async () => {
    const directory = mkdtempSync(join(tmpdir(), 'dstack-kubeconfig-'));
    const file = join(directory, 'config');
    writeFileSync(file, KUBECONFIG);
    const configurator = plugin.createConfigurator();

    const stored = record(
      await configurator.createBackend(
        'main',
        asWritten({ type: 'kubernetes', kubeconfig: { filename: file } }),
      ),
    );

    expect(JSON.parse(stored.config)).toEqual({ type: 'kubernetes' });
    expect(JSON.parse(stored.auth)).toEqual({ type: 'kubeconfig', filename: file, data: KUBECONFIG });
    expect(kubernetesConfigModels.configFromRecord(stored).creds.data).toBe(KUBECONFIG);
  });

  it('refuses top-level proxy_jump or namespace beside contexts, and duplicate contexts, as dstack', async () => {
    const configurator = plugin.createConfigurator();
    const options = {
      origin: 'server_config',
      defaultCredsEnabled: true,
      customEndpointsAllowed: true,
    } as const;
    const base = { type: 'kubernetes', kubeconfig: { data: KUBECONFIG }, contexts: ['main'] };

    await expect(
      configurator.validateConfig(asWritten({ ...base, namespace: 'x' }), options),
    ).rejects.toMatchObject({
      fields: [['namespace']],
    });
    await expect(
      configurator.validateConfig(asWritten({ ...base, proxy_jump: { hostname: 'h' } }), options),
    ).rejects.toMatchObject({ fields: [['proxy_jump']] });
    await expect(
      configurator.validateConfig(asWritten({ ...base, contexts: ['main', { name: 'main' }] }), options),
    ).rejects.toThrow('duplicate contexts: main');
  });
});

describe('clustersOf', () => {
  it("uses the current context in region '' with the config's namespace (default 'default')", () => {
    const [cluster] = clustersOf({ type: 'kubernetes' }, KUBECONFIG);

    expect(cluster).toMatchObject({ contextName: 'main', region: '', namespace: 'default', proxyJump: {} });
    expect(cluster?.access).toMatchObject({
      server: 'https://127.0.0.1:6443',
      certificateAuthority: 'CA PEM',
      clientCertificate: 'CERT PEM',
      clientKey: 'KEY PEM',
    });
  });

  it("makes each context a region with the context's namespace and its own proxy_jump", () => {
    const clusters = clustersOf(
      {
        type: 'kubernetes',
        contexts: ['main', { name: 'gpu', proxy_jump: { hostname: 'node-1', port: 30022 } }],
      },
      KUBECONFIG,
    );

    expect(clusters.map((cluster) => [cluster.region, cluster.namespace])).toEqual([
      ['main', 'default'],
      ['gpu', 'ml'],
    ]);
    expect(clusters[1]?.proxyJump).toEqual({ hostname: 'node-1', port: 30022 });
    expect(clusters[1]?.access).toMatchObject({ token: 'secret-token', insecureSkipTlsVerify: true });
  });

  it('names a missing context and refuses exec plugins clearly', () => {
    expect(() => clustersOf({ type: 'kubernetes', contexts: ['nope'] }, KUBECONFIG)).toThrow(
      'kubeconfig: context "nope" not found',
    );
    expect(() => clustersOf({ type: 'kubernetes', contexts: ['eks'] }, KUBECONFIG)).toThrow(
      /exec or auth-provider/,
    );
  });
});
