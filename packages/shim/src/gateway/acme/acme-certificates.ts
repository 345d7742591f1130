/**
 * The gateway's ACME certificates, one per service host name (dstack's gateway runs certbot for
 * each service it registers): obtained when a service with HTTPS appears, renewed once less than
 * a third of its lifetime is left (certbot's 30 days of Let's Encrypt's 90), kept on the gateway's
 * disk so a restarted gateway serves at once. One name is issued at a time; a failure is kept as
 * the name's status (the server shows it) and logged, and retried later with a growing delay, so a
 * name whose DNS does not point at the gateway does not hammer the ACME server's rate limits.
 */
import { createPrivateKey, generateKeyPairSync, type KeyObject, X509Certificate } from 'node:crypto';
import { mkdir, readdir, readFile, rename, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { createSecureContext, type SecureContext } from 'node:tls';
import type { GatewayAcme, GatewayCertificateStatus } from '@dstack/core/agent-protocol';
import { AcmeClient, type ChallengeAnswers } from './acme-client.js';

interface StoredCertificate {
  hostname: string;
  directory_url: string;
  private_key: string;
  /** The chain, leaf first (PEM). */
  certificate: string;
}

interface Issued extends StoredCertificate {
  context: SecureContext;
  notBefore: number;
  notAfter: number;
}

/**
 * Waits after each failure of a name, then hourly: quick retries while its DNS is being set up,
 * and no more than five failures in an hour (Let's Encrypt's limit of failed validations per
 * name and account; a rate-limited answer is shown like any other failure).
 */
const RETRY_DELAYS_MS = [30_000, 60_000, 120_000, 240_000];
const LAST_RETRY_MS = 60 * 60_000;
/** Renewals are looked for this often even when nothing changes. */
const RENEWAL_CHECK_MS = 60 * 60_000;

/** Whether a certificate valid from `notBefore` to `notAfter` is due for renewal at `now`. */
export function renewalDue(notBefore: number, notAfter: number, now: number): boolean {
  return notAfter - now < (notAfter - notBefore) / 3;
}

function issuedOf(stored: StoredCertificate): Issued {
  const leaf = new X509Certificate(stored.certificate);
  return {
    ...stored,
    context: createSecureContext({ cert: stored.certificate, key: stored.private_key }),
    notBefore: Date.parse(leaf.validFrom),
    notAfter: Date.parse(leaf.validTo),
  };
}

export class GatewayAcmeCertificates {
  /** The http-01 answers the gateway's port 80 serves, by token. */
  readonly challenges = new Map<string, string>();
  readonly #directory: string;
  readonly #log: (line: string) => void;
  readonly #issued = new Map<string, Issued>();
  readonly #failures = new Map<string, { message: string; retryAt: number; attempts: number }>();
  #settings: GatewayAcme | null = null;
  #wanted: string[] = [];
  #running: Promise<void> | null = null;
  #timer: NodeJS.Timeout | null = null;
  #closed = false;

  constructor(home: string, log: (line: string) => void) {
    this.#directory = join(home, 'certificates');
    this.#log = log;
  }

  /** Loads the certificates stored by an earlier run; an unreadable file is skipped (issued again). */
  async load(): Promise<void> {
    let files: string[];
    try {
      files = await readdir(this.#directory);
    } catch {
      return;
    }
    for (const file of files.filter((name) => name.endsWith('.json'))) {
      try {
        const stored = JSON.parse(await readFile(join(this.#directory, file), 'utf8')) as StoredCertificate;
        this.#issued.set(stored.hostname, issuedOf(stored));
      } catch (error) {
        this.#log(`certificate ${file} is unreadable and will be issued again: ${(error as Error).message}`);
      }
    }
  }

  /** What to serve: the ACME server (null: none) and the host names that need a certificate. */
  update(settings: GatewayAcme | null, hostnames: string[]): void {
    if (JSON.stringify(settings) !== JSON.stringify(this.#settings)) this.#failures.clear();
    this.#settings = settings;
    // Host names are the server's `{run}.{domain}`; anything else could not be a file name either.
    const names = hostnames
      .map((name) => name.toLowerCase())
      .filter((name) => /^[a-z0-9][a-z0-9.-]*$/.test(name));
    this.#wanted = settings ? [...new Set(names)] : [];
    this.#kick();
  }

  /** The TLS context for `hostname`, when it has a certificate. */
  secureContextFor(hostname: string): SecureContext | null {
    return this.#issued.get(hostname.toLowerCase())?.context ?? null;
  }

  statuses(): GatewayCertificateStatus[] {
    return this.#wanted.map((hostname) => {
      const issued = this.#issued.get(hostname);
      const failure = this.#failures.get(hostname);
      const notAfter = issued ? new Date(issued.notAfter).toISOString() : null;
      if (failure) return { hostname, status: 'failed', message: failure.message, not_after: notAfter };
      if (issued && this.#current(issued))
        return { hostname, status: 'valid', message: null, not_after: notAfter };
      return { hostname, status: 'pending', message: null, not_after: notAfter };
    });
  }

  /** Stops issuing; an issuance under way is not waited for (it may take the ACME client's whole timeout). */
  close(): void {
    this.#closed = true;
    if (this.#timer) clearTimeout(this.#timer);
  }

  #current(issued: Issued): boolean {
    return (
      issued.directory_url === this.#settings?.directory_url &&
      !renewalDue(issued.notBefore, issued.notAfter, Date.now())
    );
  }

  /** The next name to issue now, and when to look again otherwise. */
  #next(now: number): { hostname: string | null; wakeAt: number } {
    let wakeAt = now + RENEWAL_CHECK_MS;
    for (const hostname of this.#wanted) {
      const issued = this.#issued.get(hostname);
      if (issued && this.#current(issued)) continue;
      const failure = this.#failures.get(hostname);
      if (failure && failure.retryAt > now) {
        wakeAt = Math.min(wakeAt, failure.retryAt);
        continue;
      }
      return { hostname, wakeAt };
    }
    return { hostname: null, wakeAt };
  }

  #kick(): void {
    if (this.#running || this.#closed) return;
    this.#running = this.#work().finally(() => {
      this.#running = null;
    });
  }

  async #work(): Promise<void> {
    if (this.#timer) clearTimeout(this.#timer);
    for (;;) {
      if (this.#closed) return;
      const { hostname, wakeAt } = this.#next(Date.now());
      const settings = this.#settings;
      if (hostname === null || settings === null) {
        this.#timer = setTimeout(() => this.#kick(), Math.max(wakeAt - Date.now(), 1_000));
        this.#timer.unref();
        return;
      }
      await this.#issue(hostname, settings);
    }
  }

  async #issue(hostname: string, settings: GatewayAcme): Promise<void> {
    this.#log(`obtaining a certificate for ${hostname} from ${settings.directory_url}`);
    const client = new AcmeClient({
      directoryUrl: settings.directory_url,
      accountKey: await this.#accountKey(),
      caCertificates: settings.ca_certificates,
      externalAccount: settings.external_account
        ? { kid: settings.external_account.kid, hmacKey: settings.external_account.hmac_key }
        : null,
    });
    const answers: ChallengeAnswers = {
      set: (token, keyAuthorization) => this.challenges.set(token, keyAuthorization),
      delete: (token) => this.challenges.delete(token),
    };
    try {
      const { privateKey } = generateKeyPairSync('ec', { namedCurve: 'P-256' });
      const chain = await client.issueCertificate(hostname, privateKey, answers);
      const stored: StoredCertificate = {
        hostname,
        directory_url: settings.directory_url,
        private_key: privateKey.export({ type: 'pkcs8', format: 'pem' }) as string,
        certificate: chain,
      };
      const issued = issuedOf(stored);
      await this.#save(stored);
      this.#issued.set(hostname, issued);
      this.#failures.delete(hostname);
      this.#log(`certificate for ${hostname} issued, valid until ${new Date(issued.notAfter).toISOString()}`);
    } catch (error) {
      const attempts = (this.#failures.get(hostname)?.attempts ?? 0) + 1;
      const delayMs = RETRY_DELAYS_MS[attempts - 1] ?? LAST_RETRY_MS;
      const message = `could not obtain a certificate for ${hostname}: ${(error as Error).message}`;
      this.#failures.set(hostname, { message, retryAt: Date.now() + delayMs, attempts });
      this.#log(`${message} (retried in ${Math.round(delayMs / 1000)} s)`);
    } finally {
      await client.close();
    }
  }

  /** The ACME account's key, made once and kept: the same key finds the same account again. */
  async #accountKey(): Promise<KeyObject> {
    const path = join(this.#directory, 'account-key.pem');
    try {
      return createPrivateKey(await readFile(path, 'utf8'));
    } catch {
      const { privateKey } = generateKeyPairSync('ec', { namedCurve: 'P-256' });
      await mkdir(this.#directory, { recursive: true, mode: 0o700 });
      await writeFile(path, privateKey.export({ type: 'pkcs8', format: 'pem' }), { mode: 0o600 });
      return privateKey;
    }
  }

  async #save(stored: StoredCertificate): Promise<void> {
    await mkdir(this.#directory, { recursive: true, mode: 0o700 });
    const path = join(this.#directory, `${stored.hostname}.json`);
    const temporary = `${path}.${process.pid}.tmp`;
    await writeFile(temporary, JSON.stringify(stored), { mode: 0o600 });
    await rename(temporary, path);
  }
}
