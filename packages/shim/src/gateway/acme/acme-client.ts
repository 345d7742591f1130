/**
 * A small ACME client (RFC 8555) for what the gateway needs, as dstack's gateway does with certbot:
 * one certificate per service host name, validated by the http-01 challenge the gateway itself
 * answers on port 80. The flow: the directory, a nonce, the account (an EC P-256 key: asking for
 * the account again with the same key finds it), an order for the name, its authorization's
 * http-01 challenge, finalize with a CSR, download the chain. Problems the server reports (rate
 * limits, a challenge that could not reach the gateway) are thrown as `AcmeError` with its detail.
 */
import { createHash, createHmac, type KeyObject, sign } from 'node:crypto';
import { rootCertificates } from 'node:tls';
import { Agent, type Dispatcher, request } from 'undici';
import { certificateRequestFor } from './certificate-request.js';

export class AcmeError extends Error {
  override readonly name = 'AcmeError';
  constructor(
    message: string,
    /** The problem's type (`urn:ietf:params:acme:error:rateLimited`, …), when the server gave one. */
    readonly problemType: string | null = null,
  ) {
    super(message);
  }
}

/** Where the gateway puts the answers to http-01 challenges (`/.well-known/acme-challenge/{token}`). */
export interface ChallengeAnswers {
  set(token: string, keyAuthorization: string): void;
  delete(token: string): void;
}

export interface AcmeClientOptions {
  /** The ACME directory URL. */
  directoryUrl: string;
  /** The account key: EC P-256. The same key is the same account. */
  accountKey: KeyObject;
  /** PEM certificates trusted for the ACME server's own TLS besides the system's (a test CA). */
  caCertificates?: string | null;
  /** External Account Binding: the key id and base64url HMAC key the ACME server's operator gave. */
  externalAccount?: { kid: string; hmacKey: string } | null;
  /** How long one issuance may take, all polls included. Default 90 s (certbot's is 40 s on dstack's gateways). */
  timeoutMs?: number;
}

interface Directory {
  newNonce: string;
  newAccount: string;
  newOrder: string;
}

interface Challenge {
  type: string;
  url: string;
  token: string;
  status: string;
  error?: Problem;
}

interface Authorization {
  status: string;
  identifier: { value: string };
  challenges: Challenge[];
}

interface Order {
  status: string;
  authorizations: string[];
  finalize: string;
  certificate?: string;
  error?: Problem;
}

interface Problem {
  type?: string;
  detail?: string;
}

const BAD_NONCE = 'urn:ietf:params:acme:error:badNonce';
const POLL_MS = 1_000;
/** One call's answer: an ACME server that stops answering fails the issuance instead of hanging it. */
const CALL_TIMEOUT_MS = 30_000;
const TIMEOUTS = { headersTimeout: CALL_TIMEOUT_MS, bodyTimeout: CALL_TIMEOUT_MS };
const MAX_POLL_MS = 10_000;

function base64url(data: Buffer | string): string {
  return Buffer.from(data).toString('base64url');
}

function problemMessage(problem: Problem | undefined, fallback: string): string {
  if (!problem) return fallback;
  const kind = problem.type?.replace(/^urn:ietf:params:acme:error:/, '');
  return `${problem.detail ?? fallback}${kind ? ` (${kind})` : ''}`;
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

export class AcmeClient {
  readonly #options: AcmeClientOptions;
  readonly #dispatcher: Dispatcher;
  readonly #jwk: Record<string, string>;
  #directory: Directory | null = null;
  #nonce: string | null = null;
  #accountUrl: string | null = null;

  constructor(options: AcmeClientOptions) {
    if (options.accountKey.asymmetricKeyType !== 'ec')
      throw new Error('the ACME account key must be EC P-256');
    this.#options = options;
    this.#dispatcher = new Agent({
      connect: options.caCertificates ? { ca: [...rootCertificates, options.caCertificates] } : {},
    });
    const { crv, kty, x, y } = options.accountKey.export({ format: 'jwk' });
    this.#jwk = { crv: crv as string, kty: kty as string, x: x as string, y: y as string };
  }

  /** RFC 7638's thumbprint of the account key: the second half of every key authorization. */
  get thumbprint(): string {
    const { crv, kty, x, y } = this.#jwk;
    return base64url(createHash('sha256').update(JSON.stringify({ crv, kty, x, y })).digest());
  }

  async close(): Promise<void> {
    await this.#dispatcher.close();
  }

  /**
   * A certificate chain (PEM, leaf first) for `hostname` and `certificateKey`, the http-01
   * challenge answered through `answers` while it is validated.
   */
  async issueCertificate(
    hostname: string,
    certificateKey: KeyObject,
    answers: ChallengeAnswers,
  ): Promise<string> {
    const deadline = Date.now() + (this.#options.timeoutMs ?? 90_000);
    await this.#account();
    const created = await this.#post(this.#directoryOf().newOrder, {
      identifiers: [{ type: 'dns', value: hostname }],
    });
    const orderUrl = created.location;
    if (!orderUrl) throw new AcmeError('the ACME server created an order without its URL');
    let order = created.body as Order;
    for (const authorizationUrl of order.authorizations) {
      await this.#authorize(authorizationUrl, answers, deadline);
    }
    order = await this.#pollOrder(orderUrl, ['pending'], deadline);
    if (order.status !== 'ready') {
      throw new AcmeError(
        `the order for ${hostname} is ${order.status}: ${problemMessage(order.error, 'not ready')}`,
      );
    }
    const csr = certificateRequestFor(hostname, certificateKey);
    order = (await this.#post(order.finalize, { csr: base64url(csr) })).body as Order;
    if (order.status !== 'valid') order = await this.#pollOrder(orderUrl, ['ready', 'processing'], deadline);
    if (order.status !== 'valid' || !order.certificate) {
      throw new AcmeError(
        `the order for ${hostname} is ${order.status}: ${problemMessage(order.error, 'not issued')}`,
      );
    }
    const chain = await this.#post(order.certificate, null, 'application/pem-certificate-chain');
    return chain.text;
  }

  async #authorize(url: string, answers: ChallengeAnswers, deadline: number): Promise<void> {
    let authorization = (await this.#post(url, null)).body as Authorization;
    if (authorization.status === 'valid') return;
    const name = authorization.identifier.value;
    const challenge = authorization.challenges.find((candidate) => candidate.type === 'http-01');
    if (!challenge) throw new AcmeError(`the ACME server offers no http-01 challenge for ${name}`);
    answers.set(challenge.token, `${challenge.token}.${this.thumbprint}`);
    try {
      await this.#post(challenge.url, {});
      let retryAfter: number | null = null;
      while (authorization.status === 'pending') {
        await this.#wait(retryAfter, deadline, `the validation of ${name}`);
        const answer = await this.#post(url, null);
        authorization = answer.body as Authorization;
        retryAfter = answer.retryAfterMs;
      }
    } finally {
      answers.delete(challenge.token);
    }
    if (authorization.status !== 'valid') {
      const failed = authorization.challenges.find((candidate) => candidate.type === 'http-01');
      throw new AcmeError(
        `the http-01 challenge for ${name} failed: ${problemMessage(failed?.error, authorization.status)}; make sure ${name} resolves to this gateway and its port 80 is open`,
        failed?.error?.type ?? null,
      );
    }
  }

  async #pollOrder(url: string, waitWhile: string[], deadline: number): Promise<Order> {
    let answer = await this.#post(url, null);
    while (waitWhile.includes((answer.body as Order).status)) {
      await this.#wait(answer.retryAfterMs, deadline, 'the order');
      answer = await this.#post(url, null);
    }
    return answer.body as Order;
  }

  async #wait(retryAfterMs: number | null, deadline: number, what: string): Promise<void> {
    const delay = Math.min(retryAfterMs ?? POLL_MS, MAX_POLL_MS);
    if (Date.now() + delay > deadline) throw new AcmeError(`timed out waiting for ${what}`);
    await sleep(delay);
  }

  #directoryOf(): Directory {
    if (!this.#directory) throw new Error('the ACME directory is not loaded');
    return this.#directory;
  }

  async #account(): Promise<void> {
    if (this.#accountUrl) return;
    const answer = await request(this.#options.directoryUrl, { dispatcher: this.#dispatcher, ...TIMEOUTS });
    if (answer.statusCode !== 200) {
      await answer.body.dump();
      throw new AcmeError(`the ACME directory ${this.#options.directoryUrl} answered ${answer.statusCode}`);
    }
    this.#directory = (await answer.body.json()) as Directory;
    const newAccount = this.#directory.newAccount;
    const account = await this.#post(newAccount, {
      termsOfServiceAgreed: true,
      ...(this.#options.externalAccount
        ? { externalAccountBinding: this.#externalAccountBinding(newAccount, this.#options.externalAccount) }
        : {}),
    });
    if (!account.location) throw new AcmeError('the ACME server created an account without its URL');
    this.#accountUrl = account.location;
  }

  /** RFC 8555 §7.3.4: the account key, signed with the operator's HMAC key under its key id. */
  #externalAccountBinding(url: string, binding: { kid: string; hmacKey: string }): Record<string, string> {
    const protectedPart = base64url(JSON.stringify({ alg: 'HS256', kid: binding.kid, url }));
    const payloadPart = base64url(JSON.stringify(this.#jwk));
    const signature = createHmac('sha256', Buffer.from(binding.hmacKey, 'base64url'))
      .update(`${protectedPart}.${payloadPart}`)
      .digest();
    return { protected: protectedPart, payload: payloadPart, signature: base64url(signature) };
  }

  async #freshNonce(): Promise<string> {
    const answer = await request(this.#directoryOf().newNonce, {
      method: 'HEAD',
      dispatcher: this.#dispatcher,
      ...TIMEOUTS,
    });
    await answer.body.dump();
    const nonce = answer.headers['replay-nonce'];
    if (typeof nonce !== 'string') throw new AcmeError('the ACME server gave no nonce');
    return nonce;
  }

  /** A JWS-signed POST (`payload` null: POST-as-GET), retried on a rejected nonce as RFC 8555 asks. */
  async #post(
    url: string,
    payload: unknown,
    accept = 'application/json',
  ): Promise<{ body: unknown; text: string; location: string | null; retryAfterMs: number | null }> {
    for (let attempt = 0; ; attempt++) {
      const nonce = this.#nonce ?? (await this.#freshNonce());
      this.#nonce = null;
      const header = {
        alg: 'ES256',
        nonce,
        url,
        ...(this.#accountUrl ? { kid: this.#accountUrl } : { jwk: this.#jwk }),
      };
      const protectedPart = base64url(JSON.stringify(header));
      const payloadPart = payload === null ? '' : base64url(JSON.stringify(payload));
      const signature = sign('sha256', Buffer.from(`${protectedPart}.${payloadPart}`), {
        key: this.#options.accountKey,
        dsaEncoding: 'ieee-p1363',
      });
      const answer = await request(url, {
        method: 'POST',
        dispatcher: this.#dispatcher,
        ...TIMEOUTS,
        headers: { 'content-type': 'application/jose+json', accept },
        body: JSON.stringify({
          protected: protectedPart,
          payload: payloadPart,
          signature: base64url(signature),
        }),
      });
      const replayNonce = answer.headers['replay-nonce'];
      if (typeof replayNonce === 'string') this.#nonce = replayNonce;
      const text = await answer.body.text();
      const contentType = String(answer.headers['content-type'] ?? '');
      const body = contentType.includes('json') && text ? JSON.parse(text) : null;
      if (answer.statusCode >= 400) {
        const problem = (body ?? {}) as Problem;
        if (problem.type === BAD_NONCE && attempt < 3) continue;
        throw new AcmeError(
          `the ACME server refused ${new URL(url).pathname} (${answer.statusCode}): ${problemMessage(problem, text.slice(0, 200))}`,
          problem.type ?? null,
        );
      }
      const location = answer.headers.location;
      const retryAfter = Number(answer.headers['retry-after']);
      return {
        body,
        text,
        location: typeof location === 'string' ? location : null,
        retryAfterMs: Number.isFinite(retryAfter) && retryAfter > 0 ? retryAfter * 1000 : null,
      };
    }
  }
}
