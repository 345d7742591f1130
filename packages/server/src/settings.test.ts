import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { homedir, tmpdir } from 'node:os';
import { join } from 'node:path';
import { ConfigurationError } from '@dstack/core';
import { describe, expect, it } from 'vitest';
import { codeUnpackedLimitOf } from './repos/code-settings.js';
import { loadServerSettings } from './settings.js';

/** The code group of the settings `env` makes. */
const codeSettings = (env: NodeJS.ProcessEnv) => loadServerSettings(env).code;

describe('loadServerSettings', () => {
  it("uses dstack's defaults", () => {
    expect(loadServerSettings({})).toEqual({
      serverDir: join(homedir(), '.dstack', 'server'),
      host: '127.0.0.1',
      port: 8000,
      databaseUrl: null,
      adminToken: null,
      backends: {
        maxOffersTried: 25,
        offersDeadlineMs: 10_000,
        catalogUrl: null,
        defaultCredsEnabled: true,
        allowDefaultCredsInApi: false,
        allowCustomEndpoints: false,
        validationDeadlineMs: 5000,
      },
      agents: { shimDownloadUrl: null, runnerDownloadUrl: null },
      code: { uploadLimitBytes: 2 * 1024 * 1024, unpackedLimitBytes: null },
      images: { baseImage: null, version: null, ubuntuVersion: null, dindImage: null },
      metrics: {
        collectIntervalMs: 10_000,
        runningTtlSeconds: 3600,
        finishedTtlSeconds: 7 * 24 * 3600,
        prometheusEnabled: false,
        prometheusAuthToken: null,
      },
      events: { ttlSeconds: 30 * 24 * 3600 },
      acme: {
        server: 'https://acme-v02.api.letsencrypt.org/directory',
        caCertificates: null,
        externalAccount: null,
      },
      sshProxy: { port: 0, address: null, attachWindowMs: 10_000 },
    });
  });

  it('caps unpacked code by DSTACK_SERVER_CODE_UNPACKED_LIMIT, else at 64 times the upload limit, naming a bad one', () => {
    expect(codeUnpackedLimitOf(codeSettings({}))).toBe(128 * 1024 * 1024);
    expect(codeUnpackedLimitOf(codeSettings({ DSTACK_SERVER_CODE_UPLOAD_LIMIT: '1048576' }))).toBe(
      64 * 1024 * 1024,
    );
    // Uploads without a limit: unpacking without one too, unless the cap is set.
    expect(codeUnpackedLimitOf(codeSettings({ DSTACK_SERVER_CODE_UPLOAD_LIMIT: '0' }))).toBe(0);
    expect(
      codeUnpackedLimitOf(
        codeSettings({
          DSTACK_SERVER_CODE_UPLOAD_LIMIT: '0',
          DSTACK_SERVER_CODE_UNPACKED_LIMIT: '5000',
        }),
      ),
    ).toBe(5000);
    expect(codeUnpackedLimitOf(codeSettings({ DSTACK_SERVER_CODE_UNPACKED_LIMIT: '0' }))).toBe(0);
    expect(() => loadServerSettings({ DSTACK_SERVER_CODE_UNPACKED_LIMIT: '1GB' })).toThrow(
      /DSTACK_SERVER_CODE_UNPACKED_LIMIT must be a whole number/,
    );
  });

  it("reads the gateways' ACME server, the CAs of its TLS and its External Account Binding, naming a bad one", () => {
    const dir = mkdtempSync(join(tmpdir(), 'dstack-settings-'));
    try {
      const pem = '-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n';
      writeFileSync(join(dir, 'ca.pem'), pem);
      writeFileSync(join(dir, 'empty.pem'), 'nothing here');
      const settings = loadServerSettings({
        DSTACK_ACME_SERVER: 'https://acme-staging-v02.api.letsencrypt.org/directory',
        DSTACK_ACME_SERVER_CA_FILE: join(dir, 'ca.pem'),
        DSTACK_ACME_EAB_KID: 'kid-1',
        DSTACK_ACME_EAB_HMAC_KEY: 'c2VjcmV0',
      });
      expect(settings.acme).toEqual({
        server: 'https://acme-staging-v02.api.letsencrypt.org/directory',
        caCertificates: pem,
        externalAccount: { kid: 'kid-1', hmacKey: 'c2VjcmV0' },
      });
      expect(() => loadServerSettings({ DSTACK_ACME_SERVER: 'letsencrypt' })).toThrow(
        /DSTACK_ACME_SERVER must be an http\(s\) URL/,
      );
      expect(() => loadServerSettings({ DSTACK_ACME_SERVER_CA_FILE: join(dir, 'missing.pem') })).toThrow(
        /DSTACK_ACME_SERVER_CA_FILE: cannot read/,
      );
      expect(() => loadServerSettings({ DSTACK_ACME_SERVER_CA_FILE: join(dir, 'empty.pem') })).toThrow(
        /DSTACK_ACME_SERVER_CA_FILE: .* holds no PEM certificate/,
      );
      expect(() => loadServerSettings({ DSTACK_ACME_EAB_KID: 'kid-1' })).toThrow(
        /DSTACK_ACME_EAB_HMAC_KEY must be set with DSTACK_ACME_EAB_KID/,
      );
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('reads the SSH proxy port (off: none) and the address clients are told', () => {
    expect(loadServerSettings({ DSTACK_SERVER_SSHPROXY_PORT: '2222' }).sshProxy.port).toBe(2222);
    expect(loadServerSettings({ DSTACK_SERVER_SSHPROXY_PORT: 'off' }).sshProxy.port).toBeNull();
    expect(
      loadServerSettings({ DSTACK_SERVER_SSHPROXY_ADDRESS: 'ssh.example.com:22' }).sshProxy.address,
    ).toBe('ssh.example.com:22');
    expect(() => loadServerSettings({ DSTACK_SERVER_SSHPROXY_PORT: 'ssh' })).toThrow(
      /DSTACK_SERVER_SSHPROXY_PORT must be a whole number/,
    );
  });

  it('reads the environment, and overrides win', () => {
    const settings = loadServerSettings(
      {
        DSTACK_SERVER_DIR: '/srv/dstack',
        DSTACK_SERVER_HOST: '0.0.0.0',
        DSTACK_SERVER_PORT: '3000',
        DSTACK_DATABASE_URL: 'postgresql+asyncpg://u@db/dstack',
        DSTACK_SERVER_ADMIN_TOKEN: 'tok',
        DSTACK_SERVER_MAX_OFFERS_TRIED: '5',
        DSTACK_DEFAULT_CREDS_DISABLED: '1',
        DSTACK_SERVER_ALLOW_DEFAULT_CREDS: 'true',
        DSTACK_SERVER_ALLOW_CUSTOM_BACKEND_ENDPOINTS: 'yes',
        DSTACK_SERVER_BACKEND_VALIDATION_DEADLINE: '2',
        DSTACK_SHIM_DOWNLOAD_URL: 'http://10.0.0.1:8080/dstack-shim.tgz',
        DSTACK_RUNNER_DOWNLOAD_URL: 'http://10.0.0.1:8080/dstack-runtime.tar.gz',
        DSTACK_SERVER_OFFERS_DEADLINE: '3',
        DSTACK_SERVER_CODE_UPLOAD_LIMIT: '0',
        GPUHUNT_CATALOG_URL: 'http://10.0.0.1:8080/v3',
        DSTACK_DOCKER_BASE_IMAGE: '127.0.0.1:5000/dstackai/base',
        // This server's older name for a mirror: dstack's wins.
        DSTACK_BASE_IMAGE: '127.0.0.1:5001/old/base',
        DSTACK_DOCKER_BASE_IMAGE_VERSION: '0.16',
        DSTACK_DOCKER_BASE_IMAGE_UBUNTU_VERSION: '22.04',
        DSTACK_DIND_IMAGE: '127.0.0.1:5000/dstackai/dind:v2',
        DSTACK_SERVER_METRICS_COLLECT_INTERVAL: '2',
        DSTACK_SERVER_METRICS_RUNNING_TTL_SECONDS: '600',
        DSTACK_SERVER_METRICS_FINISHED_TTL_SECONDS: '86400',
        DSTACK_ENABLE_PROMETHEUS_METRICS: '',
        DSTACK_PROMETHEUS_AUTH_TOKEN: 'scrape-token',
      },
      { port: 0 },
    );
    expect(settings).toMatchObject({
      serverDir: '/srv/dstack',
      host: '0.0.0.0',
      port: 0,
      databaseUrl: 'postgresql+asyncpg://u@db/dstack',
      adminToken: 'tok',
      backends: {
        maxOffersTried: 5,
        offersDeadlineMs: 3000,
        catalogUrl: 'http://10.0.0.1:8080/v3',
        defaultCredsEnabled: false,
        allowDefaultCredsInApi: true,
        allowCustomEndpoints: true,
        validationDeadlineMs: 2000,
      },
      agents: {
        shimDownloadUrl: 'http://10.0.0.1:8080/dstack-shim.tgz',
        runnerDownloadUrl: 'http://10.0.0.1:8080/dstack-runtime.tar.gz',
      },
      code: { uploadLimitBytes: 0 },
      images: {
        baseImage: '127.0.0.1:5000/dstackai/base',
        version: '0.16',
        ubuntuVersion: '22.04',
        dindImage: '127.0.0.1:5000/dstackai/dind:v2',
      },
      metrics: {
        collectIntervalMs: 2000,
        runningTtlSeconds: 600,
        finishedTtlSeconds: 86400,
        prometheusEnabled: true,
        prometheusAuthToken: 'scrape-token',
      },
    });
  });

  it('names the variable of a bad value', () => {
    expect(() => loadServerSettings({ DSTACK_SERVER_PORT: 'eighty' })).toThrow(ConfigurationError);
    expect(() => loadServerSettings({ DSTACK_SERVER_PORT: '70000' })).toThrow(
      /DSTACK_SERVER_PORT must be a whole number/,
    );
    expect(() => loadServerSettings({ DSTACK_SERVER_MAX_OFFERS_TRIED: '0' })).toThrow(
      /DSTACK_SERVER_MAX_OFFERS_TRIED/,
    );
    expect(() => loadServerSettings({ DSTACK_SERVER_CODE_UPLOAD_LIMIT: '2MB' })).toThrow(
      /DSTACK_SERVER_CODE_UPLOAD_LIMIT must be a whole number/,
    );
    expect(() => loadServerSettings({ DSTACK_SHIM_DOWNLOAD_URL: 'ftp://host/shim.tgz' })).toThrow(
      /DSTACK_SHIM_DOWNLOAD_URL must be an http\(s\) URL/,
    );
    expect(() => loadServerSettings({ DSTACK_RUNNER_DOWNLOAD_URL: 'runtime.tar.gz' })).toThrow(
      /DSTACK_RUNNER_DOWNLOAD_URL must be an http\(s\) URL/,
    );
    expect(() => loadServerSettings({ DSTACK_SERVER_OFFERS_DEADLINE: '0' })).toThrow(
      /DSTACK_SERVER_OFFERS_DEADLINE/,
    );
    expect(() => loadServerSettings({ DSTACK_DOCKER_BASE_IMAGE: 'mirror:5000/dstackai/base:0.15' })).toThrow(
      /DSTACK_DOCKER_BASE_IMAGE must be an image repository without a tag/,
    );
    expect(() => loadServerSettings({ DSTACK_BASE_IMAGE: 'mirror:5000/dstackai/base:0.15' })).toThrow(
      /DSTACK_BASE_IMAGE must be an image repository without a tag/,
    );
    expect(() => loadServerSettings({ DSTACK_DOCKER_BASE_IMAGE_VERSION: '0.15 -x' })).toThrow(
      /DSTACK_DOCKER_BASE_IMAGE_VERSION must hold only/,
    );
    expect(() => loadServerSettings({ DSTACK_DIND_IMAGE: 'dstackai/dind -x' })).toThrow(
      /DSTACK_DIND_IMAGE must be an image name/,
    );
  });
});
