/**
 * The body of `PUT /api/v0/asks/{id}/` (create instance) as Vast.ai reads it, e.g. what dstack
 * sends: `{client_id: "me", image, price: null|bid, disk, label, env: {"-p 10022:10022": "1"},
 * user: "root", onstart: "/bin/sh", args: ["-c", "cmd1 && cmd2"], runtype: "args", image_login,
 * python_utf8, lang_utf8, use_jupyter_lab, jupyter_dir, create_from, force}`.
 *
 * `env` mixes environment variables (`"NAME": "value"`) with docker options as the CLI's
 * `parse_env` encodes them: `"-p H:C[/udp]": "1"` (publish container port C; Vast.ai picks the
 * host port, H is only a wish), `"-h": "hostname"`, `"-v …"`/`"-n …"` (recorded, not applied).
 * Fields the emulator has no use for are accepted and ignored, as Vast.ai does; a field of the
 * wrong type is a 400 `invalid_args` naming it.
 */

export const VASTAI_RUNTYPES = [
  'args',
  'ssh',
  'ssh_proxy',
  'ssh_direc ssh_proxy',
  'jupyter_proxy ssh_proxy',
  'jupyter_direc ssh_direc ssh_proxy',
  'jupyter',
] as const;
export type VastaiRuntype = (typeof VASTAI_RUNTYPES)[number];

/** A container port the rental publishes, e.g. `10022/tcp`. */
export interface VastaiPortRequest {
  readonly containerPort: number;
  readonly protocol: 'tcp' | 'udp';
}

export interface VastaiRentRequest {
  readonly image: string;
  /** $/hour bid of an interruptible rental; null for on-demand. */
  readonly bid: number | null;
  /** GB. */
  readonly diskGb: number;
  readonly label: string | null;
  /** The environment variables of `env`. */
  readonly environment: Readonly<Record<string, string>>;
  /** The `-p` options of `env`, in order, without duplicates. */
  readonly ports: readonly VastaiPortRequest[];
  /** The `-h` option of `env`. */
  readonly hostname: string | undefined;
  /** Other docker options of `env` (`-v …`, `-n …`), kept for the record. */
  readonly ignoredDockerOptions: readonly string[];
  readonly user: string | null;
  readonly onstart: string | null;
  readonly args: readonly string[] | null;
  readonly runtype: VastaiRuntype;
  readonly imageLogin: string | null;
}

/** A rental Vast.ai refuses before it creates anything: 400 `invalid_args` with `msg`. */
export class VastaiRentRequestError extends Error {
  override readonly name = 'VastaiRentRequestError';
}

/** Vast.ai's default disk when a rental names none, GB. */
export const DEFAULT_VASTAI_DISK_GB = 10;
/** Outside the `args` runtype `onstart` is a script of at most this many characters. */
export const MAX_VASTAI_ONSTART_LENGTH = 4048;

const ENVIRONMENT_NAME = /^[A-Za-z_][A-Za-z0-9_]*$/;

function optionalString(body: Record<string, unknown>, field: string): string | null {
  const value = body[field];
  if (value === undefined || value === null) return null;
  if (typeof value !== 'string') throw new VastaiRentRequestError(`${field}: expected a string or null`);
  return value;
}

export function parseVastaiRentRequest(body: unknown): VastaiRentRequest {
  if (typeof body !== 'object' || body === null || Array.isArray(body)) {
    throw new VastaiRentRequestError('the request body must be a JSON object');
  }
  const fields = body as Record<string, unknown>;
  const image = fields.image;
  if (typeof image !== 'string' || image.trim() === '') {
    throw new VastaiRentRequestError('image: expected a docker image name');
  }
  const price = fields.price;
  if (price !== undefined && price !== null && (typeof price !== 'number' || !(price > 0))) {
    throw new VastaiRentRequestError(
      `price: expected a positive bid in $/hour or null, got ${JSON.stringify(price)}`,
    );
  }
  const disk = fields.disk ?? DEFAULT_VASTAI_DISK_GB;
  if (typeof disk !== 'number' || !(disk > 0)) {
    throw new VastaiRentRequestError(`disk: expected a positive number of GB, got ${JSON.stringify(disk)}`);
  }
  const runtype = fields.runtype ?? 'ssh';
  if (!(VASTAI_RUNTYPES as readonly unknown[]).includes(runtype)) {
    throw new VastaiRentRequestError(
      `runtype: expected one of ${VASTAI_RUNTYPES.map((each) => JSON.stringify(each)).join(', ')}, got ${JSON.stringify(runtype)}`,
    );
  }
  const args = fields.args;
  if (
    args !== undefined &&
    args !== null &&
    (!Array.isArray(args) || !args.every((each) => typeof each === 'string'))
  ) {
    throw new VastaiRentRequestError('args: expected a list of strings or null');
  }
  const onstart = optionalString(fields, 'onstart');
  if (runtype !== 'args' && onstart !== null && onstart.length > MAX_VASTAI_ONSTART_LENGTH) {
    throw new VastaiRentRequestError(`onstart: at most ${MAX_VASTAI_ONSTART_LENGTH} characters`);
  }
  return {
    image: image.trim(),
    bid: typeof price === 'number' ? price : null,
    diskGb: disk,
    label: optionalString(fields, 'label'),
    ...parseEnv(fields.env),
    user: optionalString(fields, 'user'),
    onstart,
    args: (args as string[] | null | undefined) ?? null,
    runtype: runtype as VastaiRuntype,
    imageLogin: optionalString(fields, 'image_login'),
  };
}

type ParsedEnv = Pick<VastaiRentRequest, 'environment' | 'ports' | 'hostname' | 'ignoredDockerOptions'>;

function parseEnv(env: unknown): ParsedEnv {
  const parsed = {
    environment: {} as Record<string, string>,
    ports: [] as VastaiPortRequest[],
    hostname: undefined as string | undefined,
    ignoredDockerOptions: [] as string[],
  };
  if (env === undefined || env === null) return parsed;
  if (typeof env !== 'object' || Array.isArray(env)) {
    throw new VastaiRentRequestError('env: expected an object of variables and docker options');
  }
  for (const [key, value] of Object.entries(env as Record<string, unknown>)) {
    if (value !== null && !['string', 'number', 'boolean'].includes(typeof value)) {
      throw new VastaiRentRequestError(`env.${key}: expected a string value`);
    }
    const text = value === null ? '' : String(value);
    if (key.startsWith('-p ')) {
      const port = parsePortOption(key.slice(3).trim(), key);
      if (
        !parsed.ports.some(
          (each) => each.containerPort === port.containerPort && each.protocol === port.protocol,
        )
      ) {
        parsed.ports.push(port);
      }
    } else if (key === '-h') {
      parsed.hostname = text;
    } else if (key.startsWith('-')) {
      parsed.ignoredDockerOptions.push(key);
    } else if (ENVIRONMENT_NAME.test(key)) {
      parsed.environment[key] = text;
    } else {
      throw new VastaiRentRequestError(
        `env.${key}: not a variable name nor a docker option (-p, -h, -v, -n)`,
      );
    }
  }
  return parsed;
}

/** `H:C`, `C`, with an optional `/tcp` or `/udp`. */
function parsePortOption(option: string, key: string): VastaiPortRequest {
  const match = /^(?:(\d{1,5}):)?(\d{1,5})(?:\/(tcp|udp))?$/.exec(option);
  const containerPort = Number(match?.[2]);
  if (!match || containerPort < 1 || containerPort > 65535) {
    throw new VastaiRentRequestError(`env.${key}: expected "-p HOST:CONTAINER[/tcp|/udp]"`);
  }
  return { containerPort, protocol: (match[3] as 'tcp' | 'udp' | undefined) ?? 'tcp' };
}

/** Vast.ai's own ssh runtypes also publish the container's sshd. */
export function publishedPorts(request: VastaiRentRequest): readonly VastaiPortRequest[] {
  const ssh = request.runtype.includes('ssh') && !request.ports.some((port) => port.containerPort === 22);
  return ssh ? [...request.ports, { containerPort: 22, protocol: 'tcp' }] : request.ports;
}
