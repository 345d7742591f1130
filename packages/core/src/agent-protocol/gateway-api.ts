/**
 * The gateway agent's protocol: what the server sends it and where. The gateway agent runs on a
 * gateway instance and serves the project's services at `https://{run}.{domain}`; the server
 * reaches its management API on the instance's loopback through its SSH tunnel (as dstack's
 * gateway app on `localhost:8000`) and sends it the whole state it should serve, which the agent
 * stores on its disk, so it keeps serving what it was last told while the server is away.
 */
import * as z from 'zod';

/** The gateway's management API, on the instance's loopback only (dstack's gateway app port). */
export const DSTACK_GATEWAY_API_PORT = 8000;
/** Where the gateway serves services over HTTPS. */
export const DSTACK_GATEWAY_HTTPS_PORT = 443;
/** Where it serves plain HTTP: a redirect to HTTPS, or the services themselves without a certificate. */
export const DSTACK_GATEWAY_HTTP_PORT = 80;

/** A replica the gateway forwards to: `http://host:port` as the gateway reaches it. */
export const GatewayReplicaTargetSchema = z.object({
  /** The replica's job id. */
  id: z.string(),
  url: z.string(),
});

/**
 * A service's `rate_limits` as the gateway enforces them (the configuration's, defaults filled in):
 * per client key and longest matching path prefix, `burst + 1` at once refilled at `rps`.
 */
export const GatewayRateLimitSchema = z.object({
  prefix: z.string(),
  key: z.discriminatedUnion('type', [
    z.object({ type: z.literal('ip_address') }),
    z.object({ type: z.literal('header'), header: z.string() }),
  ]),
  rps: z.number().positive(),
  burst: z.int().min(0),
});

/** A service the gateway publishes. */
export const GatewayServiceSchema = z.object({
  project: z.string(),
  run_name: z.string(),
  /** The run's id: what the gateway's request stats are keyed by. Absent in a state stored by an older agent. */
  run_id: z.string().default(''),
  /** The host name it answers at, e.g. `my-run.example.com`. */
  hostname: z.string(),
  /** Whether a project member's dstack token is required (the service's `auth`). */
  auth: z.boolean(),
  /** Whether plain HTTP redirects to HTTPS (the service's `https`; needs a certificate). */
  https: z.boolean(),
  /** Ready replicas, taken in turn; none: 503, unless `scales_from_zero`. */
  replicas: z.array(GatewayReplicaTargetSchema),
  /**
   * The service may have no replica (`replicas: 0..N`): a request with none ready waits for one
   * (up to `SCALE_FROM_ZERO_WAIT_MS`), and the stats say it waits, so the server starts one.
   */
  scales_from_zero: z.boolean().default(false),
  /** Past a limit the gateway answers 429 with `Retry-After`. */
  rate_limits: z.array(GatewayRateLimitSchema).default(() => []),
});
export type GatewayService = z.output<typeof GatewayServiceSchema>;

/** Let's Encrypt's production ACME directory: where dstack's gateways get certificates by default. */
export const LETS_ENCRYPT_DIRECTORY_URL = 'https://acme-v02.api.letsencrypt.org/directory';

/**
 * The ACME server the gateway obtains its certificates from (a gateway with `certificate: {type:
 * lets-encrypt}`): one per service host name whose `https` is true, validated by http-01 on port 80.
 */
export const GatewayAcmeSchema = z.object({
  /** The ACME directory URL (the server's `DSTACK_ACME_SERVER`). */
  directory_url: z.string(),
  /** PEM certificates trusted for the ACME server's own TLS besides the system's (a test CA); null: the system's only. */
  ca_certificates: z.string().nullable(),
  /**
   * External Account Binding (RFC 8555 §7.3.4), for ACME servers that require one (ZeroSSL, …):
   * the server's `DSTACK_ACME_EAB_KID` and `DSTACK_ACME_EAB_HMAC_KEY` (base64url). Null: none.
   */
  external_account: z.object({ kid: z.string(), hmac_key: z.string() }).nullable().default(null),
});
export type GatewayAcme = z.output<typeof GatewayAcmeSchema>;

/** The whole state the server sends (`PUT /api/state`) and the agent stores. */
export const GatewayStateSchema = z.object({
  /** The certificate and key (PEM) for `*.{domain}` (`type: custom`); null: none. */
  certificate: z.object({ certificate: z.string(), private_key: z.string() }).nullable(),
  /** Certificates per service from an ACME server; null (and absent, from older servers): none. */
  acme: GatewayAcmeSchema.nullable().default(null),
  services: z.array(GatewayServiceSchema),
  /** Per project: sha256 hex of the dstack tokens that may call its `auth: true` services. */
  token_hashes: z.record(z.string(), z.array(z.string())),
});
export type GatewayState = z.output<typeof GatewayStateSchema>;

/** Where a service host name's ACME certificate stands: `failed` carries why (rate limit, DNS, …). */
export const GatewayCertificateStatusSchema = z.object({
  hostname: z.string(),
  status: z.enum(['valid', 'pending', 'failed']),
  message: z.string().nullable(),
  /** When the certificate it serves expires (ISO 8601); null: none yet. */
  not_after: z.string().nullable(),
});
export type GatewayCertificateStatus = z.output<typeof GatewayCertificateStatusSchema>;

/** `GET /api/healthcheck`: the agent and the state it serves. */
export const GatewayHealthSchema = z.object({
  service: z.literal('dstack-gateway'),
  version: z.string(),
  /** How many services the stored state publishes. */
  services: z.int(),
  /** The ACME certificate of each service host name that needs one (absent from older agents). */
  certificates: z.array(GatewayCertificateStatusSchema).default([]),
});
export type GatewayHealth = z.output<typeof GatewayHealthSchema>;

/**
 * `GET /api/stats/collect` (dstack's gateway route): the requests the gateway forwarded to each
 * service, per second of its clock, so the server's autoscaler counts them with its own proxy's.
 */
export const GatewayStatsSchema = z.object({
  /** The agent's clock when it answered (ms): the server places the seconds on its own clock by it. */
  now: z.number(),
  services: z.array(
    z.object({
      run_id: z.string(),
      /** `[epoch second, requests]` of the last `REQUEST_COUNTS_KEPT_SECONDS` (seconds without any left out). */
      requests: z.array(z.tuple([z.int(), z.int().min(0)])),
      /** Requests held now for a replica of the service scaled to zero. */
      waiting: z.int().min(0),
    }),
  ),
});
export type GatewayStats = z.output<typeof GatewayStatsSchema>;
