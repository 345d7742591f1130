/**
 * Error classes shared by every dstack package.
 *
 * Packages may load different copies of this module (a backend built against an
 * older core), so identity checks use a `Symbol.for` marker and `isInstance`,
 * never `instanceof` across packages.
 */

/** A class derived from `DstackError`, as its `isInstance` sees it. */
type DstackErrorClass = (abstract new (...args: never[]) => DstackError) & { readonly marker: string };

/**
 * The base of dstack's errors. A subclass declares its own `static marker` and inherits an
 * `isInstance` that recognises its instances (and its subclasses'):
 *
 * ```ts
 * export class QuotaError extends BackendError {
 *   static override readonly marker: string = '@dstack/backend-aws/QuotaError';
 *   override readonly name = 'QuotaError';
 * }
 * QuotaError.isInstance(error); // also BackendError.isInstance(error), DstackError.isInstance(error)
 * ```
 */
export class DstackError extends Error {
  /**
   * The `Symbol.for` key marking this class's instances: `@dstack/<package>/<ClassName>`, stable
   * across versions. Every subclass declares its own; an instance carries the marker of each class
   * in its chain, so `Parent.isInstance(child)` holds, also for an error from another copy.
   */
  static readonly marker: string = '@dstack/core/DstackError';
  override readonly name: string = 'DstackError';

  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    for (let cls: unknown = new.target; typeof cls === 'function' && cls !== Error; ) {
      if (Object.hasOwn(cls, 'marker')) {
        (this as unknown as Record<symbol, boolean>)[Symbol.for((cls as DstackErrorClass).marker)] = true;
      }
      cls = Object.getPrototypeOf(cls);
    }
  }

  /**
   * Whether `error` is an instance of this class or of a subclass, from any copy of its package
   * (checks the class's `Symbol.for` marker, unlike `instanceof`). Call it on the class:
   * `NoCapacityError.isInstance(error)`.
   */
  static isInstance<T extends DstackErrorClass>(this: T, error: unknown): error is InstanceType<T> {
    // biome-ignore lint/complexity/noThisInStatic: the class it is called on names the marker.
    return carriesMarkerOf(this, error);
  }
}

function carriesMarkerOf(cls: DstackErrorClass, error: unknown): boolean {
  // Without its own marker a subclass would answer for its parent's instances.
  if (!Object.hasOwn(cls, 'marker')) {
    throw new TypeError(`${cls.name} must declare its own static marker to have isInstance`);
  }
  return typeof error === 'object' && error !== null && Symbol.for(cls.marker) in error;
}

/** A user-written configuration (YAML file, API body) is invalid. */
export class ConfigurationError extends DstackError {
  static override readonly marker: string = '@dstack/core/ConfigurationError';
  override readonly name = 'ConfigurationError';
  /** The file the configuration came from, when known. */
  readonly file: string | undefined;
  /** The field path, e.g. `['resources', 'gpu']`. Empty for file-level errors. */
  readonly path: ReadonlyArray<string | number>;
  /** 1-based line and column of the offending value, when known. */
  readonly line: number | undefined;
  readonly column: number | undefined;

  constructor(
    message: string,
    details: {
      file?: string;
      path?: ReadonlyArray<string | number>;
      line?: number;
      column?: number;
      cause?: unknown;
    } = {},
  ) {
    super(message, { cause: details.cause });
    this.file = details.file;
    this.path = details.path ?? [];
    this.line = details.line;
    this.column = details.column;
  }
}

/**
 * An error the client caused and can fix (bad input, missing resource, bad
 * credentials). The server answers it with HTTP 400
 * `{"detail": [{"msg", "code", "fields"}]}`, as dstack's `ServerClientError`.
 */
export class ServerClientError extends DstackError {
  static override readonly marker: string = '@dstack/core/ServerClientError';
  override readonly name: string = 'ServerClientError';
  /** Machine-readable code, stable across versions (`error`, `resource_not_exists`, `invalid_credentials`). */
  readonly code: string;
  /** Paths of the offending fields, e.g. `[['creds', 'api_key']]`. Empty when not field-specific. */
  readonly fields: ReadonlyArray<ReadonlyArray<string>>;

  constructor(
    message: string,
    options: { code?: string; fields?: ReadonlyArray<ReadonlyArray<string>>; cause?: unknown } = {},
  ) {
    super(message, { cause: options.cause });
    this.code = options.code ?? 'error';
    this.fields = options.fields ?? [];
  }
}

/** A project, run, fleet, backend, … named by the client does not exist. */
export class ResourceNotFoundError extends ServerClientError {
  static override readonly marker: string = '@dstack/core/ResourceNotFoundError';
  override readonly name: string = 'ResourceNotFoundError';

  constructor(message = 'Resource not found', options: { cause?: unknown } = {}) {
    super(message, { code: 'resource_not_exists', cause: options.cause });
  }
}

/**
 * The provider rejected the backend's credentials, or a config field that the
 * configurator checked against the provider (VPC, IAM profile, project id) is
 * wrong. `fields` names the offending fields, e.g. `[['creds', 'api_key']]`.
 */
export class InvalidCredentialsError extends ServerClientError {
  static override readonly marker: string = '@dstack/core/InvalidCredentialsError';
  override readonly name: string = 'InvalidCredentialsError';
  /** @param fields at least one field path; `[['creds']]` when the provider does not say which. */
  constructor(
    fields: ReadonlyArray<ReadonlyArray<string>> = [['creds']],
    options: { message?: string; cause?: unknown } = {},
  ) {
    const named = fields.map((path) => path.join('.')).join(', ');
    super(options.message ?? `Invalid credentials: ${named}`, {
      code: 'invalid_credentials',
      fields,
      cause: options.cause,
    });
  }
}

/** Base of the errors a backend raises while talking to its provider. */
export class BackendError extends DstackError {
  static override readonly marker: string = '@dstack/core/BackendError';
  override readonly name: string = 'BackendError';
}

/**
 * The provider has no capacity (or quota, or balance) for this offer right now.
 * The server moves on to the next offer; it is the "try next offer" error.
 */
export class NoCapacityError extends BackendError {
  static override readonly marker: string = '@dstack/core/NoCapacityError';
  override readonly name: string = 'NoCapacityError';
  /**
   * Set when the capacity is held by the backend's own instances and frees as their jobs end
   * (the local backend's host): how long to wait before asking again. A job whose `retry`
   * covers `no-capacity` then waits for it in `submitted` instead of being resubmitted after
   * dstack's backoff. Default null: nothing is known about when capacity returns.
   */
  readonly retryAfterMs: number | null;

  constructor(message = 'No capacity for the offer', options?: { cause?: unknown; retryAfterMs?: number }) {
    super(message, { cause: options?.cause });
    this.retryAfterMs = options?.retryAfterMs ?? null;
  }
}

/**
 * The provider refused the backend's credentials (a bad or revoked key, an expired token) or
 * denied the call (an IAM policy). No offer of the backend can launch until its config changes:
 * the server stops trying the backend's other offers and says so, rather than "no capacity".
 */
export class BackendAuthenticationError extends BackendError {
  static override readonly marker: string = '@dstack/core/BackendAuthenticationError';
  override readonly name: string = 'BackendAuthenticationError';
}

/**
 * The provider throttled the backend's calls (AWS `RequestLimitExceeded`, HTTP 429) after the
 * backend's own retries. The same launch may succeed a little later: the server tries it again
 * a few times before it gives up on the backend.
 */
export class BackendRateLimitError extends BackendError {
  static override readonly marker: string = '@dstack/core/BackendRateLimitError';
  override readonly name: string = 'BackendRateLimitError';
}

/**
 * The instance will never become usable (stopped, terminated, the container
 * failed to start). Raised by `updateProvisioningData`; the instance fails
 * and is not polled again.
 */
export class ProvisioningError extends BackendError {
  static override readonly marker: string = '@dstack/core/ProvisioningError';
  override readonly name: string = 'ProvisioningError';
}

/**
 * `createPlacementGroup` cannot make a group for this offer (its instance type cannot be placed
 * in one). The server skips the offer for the cluster's first instance and tries the next.
 */
export class PlacementGroupNotSupportedError extends BackendError {
  static override readonly marker: string = '@dstack/core/PlacementGroupNotSupportedError';
  override readonly name: string = 'PlacementGroupNotSupportedError';
}

/**
 * `terminateInstance` started the termination but cannot confirm it yet;
 * the server calls it again later (every 30 s, for up to 15 minutes).
 */
export class NotYetTerminatedError extends BackendError {
  static override readonly marker: string = '@dstack/core/NotYetTerminatedError';
  override readonly name: string = 'NotYetTerminatedError';

  constructor(message = 'The instance is not terminated yet', options?: { cause?: unknown }) {
    super(message, options);
  }
}

/** A provider API call failed with an HTTP status (or a transport error, `statusCode` undefined). */
export class BackendApiCallError extends BackendError {
  static override readonly marker: string = '@dstack/core/BackendApiCallError';
  override readonly name: string = 'BackendApiCallError';
  /** HTTP status of the provider's answer; undefined for transport errors (DNS, reset, timeout). */
  readonly statusCode: number | undefined;
  /** Whether repeating the same call later may succeed (429, 5xx, transport errors by default). */
  readonly isRetryable: boolean;
  /** The provider endpoint, for logs; never contains credentials. */
  readonly url: string | undefined;
  /** The provider's answer body, truncated by the caller if large. */
  readonly responseBody: string | undefined;

  constructor(
    message: string,
    options: {
      statusCode?: number;
      isRetryable?: boolean;
      url?: string;
      responseBody?: string;
      cause?: unknown;
    } = {},
  ) {
    super(message, { cause: options.cause });
    this.statusCode = options.statusCode;
    this.url = options.url;
    this.responseBody = options.responseBody;
    this.isRetryable =
      options.isRetryable ??
      (options.statusCode === undefined ||
        options.statusCode === 408 ||
        options.statusCode === 429 ||
        options.statusCode >= 500);
  }
}

/**
 * A contract method a backend has not implemented yet (generated stubs throw it).
 * The message names the method and what an implementation must do.
 */
export class NotImplementedError extends DstackError {
  static override readonly marker: string = '@dstack/core/NotImplementedError';
  override readonly name: string = 'NotImplementedError';
  /** The method, e.g. `runJob` or `AwsCompute.runJob`. */
  readonly method: string;

  constructor(method: string, options: { description?: string; cause?: unknown } = {}) {
    const description = options.description ?? describeMethod(method);
    super(`${method}() is not implemented${description ? `: it ${description}` : ''}`, {
      cause: options.cause,
    });
    this.method = method;
  }
}

const METHOD_DESCRIPTIONS: Readonly<Record<string, string>> = {
  getOffers: 'must return the offers matching the requirements, each with its availability',
  runJob: "must start the job's instance or container and return its JobProvisioningData quickly",
  terminateInstance: 'must terminate the instance and succeed when it is already gone',
  updateProvisioningData: 'must fill hostname, internal_ip and ssh_port once known, without waiting',
  createInstance: 'must launch an instance for the offer and return its JobProvisioningData quickly',
  createPlacementGroup: 'must create the placement group and return its PlacementGroupProvisioningData',
  deletePlacementGroup: 'must delete the placement group and succeed when it is already gone',
  isSuitablePlacementGroup: 'must tell, without API calls, whether the offer fits the placement group',
  registerVolume: 'must look up the existing volume and return its VolumeProvisioningData',
  createVolume: 'must create the volume and return its VolumeProvisioningData',
  deleteVolume: 'must delete the volume',
  attachVolume: 'must attach the volume to the instance and return its VolumeAttachmentData',
  detachVolume: 'must detach the volume from the instance',
  createGatewayReplica: 'must launch a gateway instance and return its GatewayReplicaProvisioningData',
  terminateGatewayReplica: 'must terminate the gateway instance and succeed when it is already gone',
  validateConfig: 'must check the credentials and config against the provider',
  createBackend: 'must fill defaults and return the BackendRecord to store',
  getCompute: 'must build the Compute from the stored record',
};

function describeMethod(method: string): string | undefined {
  const bare = method.slice(method.lastIndexOf('.') + 1);
  return METHOD_DESCRIPTIONS[bare];
}

/** A Compute method was called for a capability its backend does not declare. */
export class UnsupportedCapabilityError extends DstackError {
  static override readonly marker: string = '@dstack/core/UnsupportedCapabilityError';
  override readonly name: string = 'UnsupportedCapabilityError';
  readonly capability: string;
  readonly backendType: string | undefined;

  constructor(capability: string, options: { backendType?: string; message?: string; cause?: unknown } = {}) {
    const backend = options.backendType ? `Backend "${options.backendType}"` : 'The backend';
    super(options.message ?? `${backend} does not support the "${capability}" capability`, {
      cause: options.cause,
    });
    this.capability = capability;
    this.backendType = options.backendType;
  }
}

/**
 * A package's backend plugin descriptor is missing, malformed, of an unknown
 * specification version, or its Compute does not match what it declares.
 */
export class BackendPluginError extends DstackError {
  static override readonly marker: string = '@dstack/core/BackendPluginError';
  override readonly name: string = 'BackendPluginError';
  /** The npm package the plugin came from, when known. */
  readonly packageName: string | undefined;

  constructor(message: string, options: { packageName?: string; cause?: unknown } = {}) {
    super(message, { cause: options.cause });
    this.packageName = options.packageName;
  }
}
