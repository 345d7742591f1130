/**
 * How the AWS emulator reads a request: which service it is for (the SigV4 credential scope's,
 * else what it looks like), its form or JSON body, and its key and signature, each refused with
 * the error that service answers; an emulator bug is answered as the service's internal error.
 */
import type { MaybePromise } from '../../conformance/test-backend-options.js';
import {
  EmulatorConnectionReset,
  EmulatorHttpError,
  type EmulatorResponse,
} from '../../emulator/emulator-responses.js';
import type { EmulatorRequest } from '../../emulator/emulator-server.js';
import type { AwsEmulatorFaults } from './aws-emulator-faults.js';
import { PRICING_TARGET_PREFIX } from './aws-pricing.js';
import { SERVICE_QUOTAS_TARGET_PREFIX } from './aws-service-quotas.js';
import { parseSigV4Authorization, sigV4SignatureMatches } from './aws-sigv4.js';
import { awsJsonError, awsQueryError, STS_XML_NAMESPACE } from './aws-xml.js';
import { Ec2ApiError } from './ec2-api-error.js';

export interface AwsEmulatorCredentials {
  readonly accessKeyId: string;
  readonly secretAccessKey: string;
  /** The IAM user GetCallerIdentity names. Default `dstack-emulator`. */
  readonly userName?: string;
}

/** The key pair every emulator accepts unless told otherwise (fake, in AWS's key format). */
export const DEFAULT_AWS_EMULATOR_CREDENTIALS: AwsEmulatorCredentials = {
  accessKeyId: 'AKIADSTACKEMULATOR01',
  secretAccessKey: 'dstackEmulatorSecretKey0000000000000000X',
  userName: 'dstack-emulator',
};

/** The services the emulator answers. */
export type AwsService = 'ec2' | 'sts' | 'servicequotas' | 'pricing';

/** The service a request is for: the credential scope's, else what the request looks like. */
export function serviceOf(request: EmulatorRequest): AwsService | undefined {
  const scoped = parseSigV4Authorization(headerOf(request, 'authorization'))?.service;
  if (scoped === 'ec2' || scoped === 'sts' || scoped === 'servicequotas' || scoped === 'pricing')
    return scoped;
  const target = headerOf(request, 'x-amz-target') ?? '';
  if (target.startsWith(SERVICE_QUOTAS_TARGET_PREFIX)) return 'servicequotas';
  if (target.startsWith(PRICING_TARGET_PREFIX)) return 'pricing';
  const form = formOf(request);
  if (form.Action !== undefined) return form.Version === '2011-06-15' ? 'sts' : 'ec2';
  return undefined;
}

function headerOf(request: EmulatorRequest, name: string): string | undefined {
  const value = request.headers[name];
  return Array.isArray(value) ? value.join(',') : value;
}

export function formOf(request: EmulatorRequest): Record<string, string> {
  return typeof request.body === 'object' && request.body !== null
    ? (request.body as Record<string, string>)
    : {};
}

/** The body of an AWS JSON 1.1 call (`application/x-amz-json-1.1`, which the toolkit leaves as text). */
export function jsonBodyOf(request: EmulatorRequest): unknown {
  const body = request.rawBody.toString('utf8');
  if (body.trim() === '') return {};
  try {
    return JSON.parse(body);
  } catch {
    throw new EmulatorHttpError(
      awsJsonError(400, 'SerializationException', 'The request body is not valid JSON'),
    );
  }
}

/**
 * Runs a service handler; an unexpected exception (an emulator bug) is answered as the service's
 * own internal error naming it, so the SDK reports it instead of failing to parse the answer.
 */
export function asService(
  service: AwsService,
  handler: (request: EmulatorRequest) => MaybePromise<EmulatorResponse>,
): (request: EmulatorRequest) => MaybePromise<EmulatorResponse> {
  return (request) => {
    try {
      return handler(request);
    } catch (error) {
      if (error instanceof EmulatorHttpError || error instanceof EmulatorConnectionReset) throw error;
      const message = `AWS emulator bug: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}`;
      if (service === 'ec2') return new Ec2ApiError(500, 'InternalError', message).response;
      if (service === 'sts')
        return awsQueryError(500, STS_XML_NAMESPACE, 'InternalFailure', message, 'Receiver');
      return awsJsonError(500, 'ServiceException', message);
    }
  };
}

/** The error each service answers for a missing key, an unknown key and a wrong signature. */
function authError(
  service: AwsService,
  kind: 'missing' | 'unknown' | 'signature',
  detail = '',
): EmulatorResponse {
  const signatureMessage =
    'The request signature we calculated does not match the signature you provided. Check your AWS Secret Access Key and signing method. Consult the service documentation for details.';
  const invalidToken = `The security token included in the request is invalid.${detail}`;
  if (service === 'ec2') {
    if (kind === 'signature') return new Ec2ApiError(403, 'SignatureDoesNotMatch', signatureMessage).response;
    return new Ec2ApiError(
      401,
      'AuthFailure',
      `AWS was not able to validate the provided access credentials${detail}`,
    ).response;
  }
  if (service === 'sts') {
    if (kind === 'missing') {
      return awsQueryError(
        403,
        STS_XML_NAMESPACE,
        'MissingAuthenticationToken',
        'Request is missing Authentication Token',
      );
    }
    if (kind === 'signature')
      return awsQueryError(403, STS_XML_NAMESPACE, 'SignatureDoesNotMatch', signatureMessage);
    return awsQueryError(403, STS_XML_NAMESPACE, 'InvalidClientTokenId', invalidToken);
  }
  if (kind === 'missing')
    return awsJsonError(403, 'MissingAuthenticationTokenException', 'Missing Authentication Token');
  if (kind === 'signature') return awsJsonError(403, 'InvalidSignatureException', signatureMessage);
  return awsJsonError(403, 'UnrecognizedClientException', invalidToken);
}

/** The operation of an AWS JSON 1.1 call, from its `x-amz-target` after the service's prefix. */
export function jsonOperation(request: EmulatorRequest, prefix: string): string {
  return (headerOf(request, 'x-amz-target') ?? '').slice(prefix.length);
}

/** What checks a request's key and signature. */
export interface AwsRequestAuthenticatorOptions {
  /** Keys the services accept. */
  readonly credentials: readonly AwsEmulatorCredentials[];
  /** Recompute SigV4 signatures and answer SignatureDoesNotMatch on a wrong secret. */
  readonly checkSignatures: boolean;
  /** An active `AuthFailure` fault refuses every key. */
  readonly faults: AwsEmulatorFaults;
  /** The regions EC2 answers in. */
  readonly regions: readonly string[];
}

/** A request's authentication: the key and region of a signed request, or the error its service answers. */
export type AwsRequestAuthenticator = (
  request: EmulatorRequest,
  service: AwsService,
) => { region: string; credentials: AwsEmulatorCredentials };

export function awsRequestAuthenticator({
  credentials,
  checkSignatures,
  faults,
  regions,
}: AwsRequestAuthenticatorOptions): AwsRequestAuthenticator {
  return function authenticate(
    request: EmulatorRequest,
    service: AwsService,
  ): { region: string; credentials: AwsEmulatorCredentials } {
    const authorization = parseSigV4Authorization(headerOf(request, 'authorization'));
    if (!authorization) throw new EmulatorHttpError(authError(service, 'missing'));
    const known = credentials.find((each) => each.accessKeyId === authorization.accessKeyId);
    if (!known || faults.has('AuthFailure')) throw new EmulatorHttpError(authError(service, 'unknown'));
    if (checkSignatures && !sigV4SignatureMatches(request, authorization, known.secretAccessKey)) {
      throw new EmulatorHttpError(authError(service, 'signature'));
    }
    if (service === 'ec2' && !regions.includes(authorization.region)) {
      // What EC2 answers in a region the account has not enabled.
      throw new EmulatorHttpError(
        authError(
          service,
          'unknown',
          ` (region ${authorization.region} is not emulated; emulated: ${regions.join(', ')})`,
        ),
      );
    }
    return { region: authorization.region, credentials: known };
  };
}
