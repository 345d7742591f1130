import { configurationBackendSchema, resourcesSpecSchema, type SpotPolicy } from '@dstack/core';
import type { GetOffersRequest } from '../api/client.js';
import type { CliIo } from '../io.js';
import { createColors } from '../output/colors.js';
import { CommandError } from '../output/command-error.js';
import { printOfferWarnings } from '../output/offer-warnings.js';
import { formatOffersTable } from '../output/offers-table.js';
import { formatJson } from '../output/printable.js';
import { connect, type ProjectOption } from './connect.js';
import type { OfferFormat } from './output-formats.js';

export { OFFER_FORMATS, type OfferFormat } from './output-formats.js';

export interface OfferOptions extends ProjectOption {
  /** GPU requirement in the configuration grammar, e.g. `A100:80GB:2`. Default: none. */
  gpu?: string;
  /** CPU requirement, e.g. `8`, `4..`, `arm:8`. Default `2..`. */
  cpu?: string;
  /** Memory requirement, e.g. `32GB..`. Default `8GB..`. */
  memory?: string;
  /** Disk requirement, e.g. `200GB..`. Default `100GB..`. */
  disk?: string;
  /** Only spot offers. */
  spot?: boolean;
  /** Only on-demand offers. Neither flag: both kinds (`auto`). */
  onDemand?: boolean;
  /** Maximum USD per hour. Default: no limit. */
  maxPrice?: string;
  /** Backends to consider. Default: all configured. */
  backend?: string[];
  /** Regions to consider. Default: all. */
  region?: string[];
  /** Offers to fetch. Default 50. */
  maxOffers?: string;
  /** `table` or `json`. Default `table`. */
  format?: OfferFormat;
}

const RESOURCE_FLAGS = { gpu: '--gpu', cpu: '--cpu', memory: '--memory', disk: '--disk' } as const;
const DEFAULT_MAX_OFFERS = 50;

interface SchemaIssue {
  path: PropertyKey[];
  message: string;
}

function firstIssue(error: unknown): SchemaIssue | undefined {
  return (error as { issues?: SchemaIssue[] }).issues?.[0];
}

function spotPolicy(options: OfferOptions): SpotPolicy {
  if (options.spot && options.onDemand) throw new CommandError('--spot and --on-demand exclude each other');
  if (options.spot) return 'spot';
  if (options.onDemand) return 'on-demand';
  return 'auto';
}

function positiveNumber(text: string, flag: string, integer: boolean): number {
  const value = Number(text);
  if (!Number.isFinite(value) || value <= 0 || (integer && !Number.isInteger(value))) {
    throw new CommandError(`${flag}: expected a positive ${integer ? 'integer' : 'number'}, got '${text}'`);
  }
  return value;
}

/**
 * The offers request from the flags. Resources go through the configuration schema, so the
 * flags take the same grammar as `resources:` in a `.dstack.yml`.
 */
export function buildOffersRequest(options: OfferOptions): GetOffersRequest {
  const resourcesInput: Record<string, string> = {};
  for (const field of Object.keys(RESOURCE_FLAGS) as (keyof typeof RESOURCE_FLAGS)[]) {
    const value = options[field];
    if (value !== undefined) resourcesInput[field] = value;
  }
  const resources = resourcesSpecSchema.safeParse(resourcesInput);
  if (!resources.success) {
    const issue = firstIssue(resources.error);
    const field = issue?.path[0] as keyof typeof RESOURCE_FLAGS | undefined;
    throw new CommandError(
      `${field ? RESOURCE_FLAGS[field] : 'resources'}: ${issue?.message ?? 'invalid value'}`,
    );
  }
  const configuration: GetOffersRequest['configuration'] = {
    type: 'task',
    resources: resources.data,
    spot_policy: spotPolicy(options),
  };
  if (options.maxPrice !== undefined)
    configuration.max_price = positiveNumber(options.maxPrice, '--max-price', false);
  if (options.backend && options.backend.length > 0) {
    const backends = configurationBackendSchema.array().safeParse(options.backend);
    if (!backends.success)
      throw new CommandError(`--backend: ${firstIssue(backends.error)?.message ?? 'invalid value'}`);
    configuration.backends = backends.data;
  }
  if (options.region && options.region.length > 0) configuration.regions = options.region;
  return {
    configuration,
    max_offers:
      options.maxOffers === undefined
        ? DEFAULT_MAX_OFFERS
        : positiveNumber(options.maxOffers, '--max-offers', true),
  };
}

/** `dstack offer`: what the configured backends offer for the requirements, cheapest first. */
export async function offerCommand(options: OfferOptions, io: CliIo): Promise<number> {
  const body = buildOffersRequest(options);
  const client = await connect(options, io);
  const answer = await client.listOffers(body);
  if (options.format === 'json') {
    io.stdout(`${formatJson(answer)}\n`);
    return 0;
  }
  printOfferWarnings(io, answer.warnings);
  if (answer.offers.length === 0) {
    io.stdout('No offers match the requirements.\n');
    return 0;
  }
  io.stdout(
    formatOffersTable(answer.offers, answer.total_offers, { colors: createColors(Boolean(io.stdoutColors)) }),
  );
  return 0;
}
