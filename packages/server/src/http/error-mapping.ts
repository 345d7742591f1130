/**
 * The one place errors become HTTP answers. Every status uses the same body,
 * `{"detail":[{"msg","code","fields"?}]}` (ApiErrorSchema of @dstack/core).
 */
import {
  type ApiError,
  ConfigurationError,
  InvalidCredentialsError,
  NoCapacityError,
  ResourceNotFoundError,
  ServerClientError,
} from '@dstack/core';
import type { z } from 'zod';
import { ForbiddenError, NotAuthenticatedError } from '../security/access-errors.js';

export interface HttpErrorAnswer {
  status: number;
  body: ApiError;
  /** Set for 500s: what to log (the client sees only a generic message). */
  logMessage?: string;
}

/** An error whose status and message are chosen by the router itself (404, 405, 413, bad JSON). */
export class HttpError extends Error {
  override readonly name = 'HttpError';
  constructor(
    readonly status: number,
    message: string,
    readonly code: string,
  ) {
    super(message);
  }
}

function answer(
  status: number,
  msg: string,
  code: string,
  fields?: ReadonlyArray<ReadonlyArray<string | number>>,
): HttpErrorAnswer {
  return {
    status,
    body: {
      detail: [
        { msg, code, ...(fields && fields.length > 0 ? { fields: fields.map((path) => [...path]) } : {}) },
      ],
    },
  };
}

/** Whether `error` is a zod validation error (from any copy of zod: plugins bring their own). */
function isZodError(error: unknown): error is { issues: z.core.$ZodIssue[] } {
  return (
    typeof error === 'object' &&
    error !== null &&
    (error as { name?: unknown }).name === 'ZodError' &&
    Array.isArray((error as { issues?: unknown }).issues)
  );
}

/** Whether an `invalid_type` issue is about an absent value (zod reports `input` only when asked to). */
function isMissingValue(issue: z.core.$ZodIssue): boolean {
  return 'input' in issue ? issue.input === undefined : /received undefined$/.test(issue.message);
}

function issuePath(issue: z.core.$ZodIssue): Array<string | number> {
  return issue.path.map((segment) => (typeof segment === 'number' ? segment : String(segment)));
}

function issueMessage(issue: z.core.$ZodIssue, path: ReadonlyArray<string | number>): string {
  const where = path.length > 0 ? `${path.join('.')}: ` : '';
  if (issue.code === 'invalid_type' && isMissingValue(issue)) return `${where}field required`;
  return `${where}${issue.message}`;
}

/**
 * How many problems one error answer lists before a last "and N more problems". A body of 800k
 * unknown fields once got a 65 MB answer that kept the server busy for seconds; the first few
 * problems are what a user fixes first anyway.
 */
export const MAX_LISTED_PROBLEMS = 10;

type Detail = ApiError['detail'][number];

/**
 * The details of one unknown-fields issue, at most `room` of them, each naming its field. The
 * strict objects of @dstack/core word the first one themselves, with a "did you mean" when a
 * known field is close.
 */
function unknownFieldDetails(
  issue: z.core.$ZodIssue & { code: 'unrecognized_keys' },
  room: number,
): Detail[] {
  const parent = issuePath(issue);
  const where = parent.length > 0 ? `${parent.join('.')}: ` : '';
  return issue.keys.slice(0, room).map((key, index) => ({
    msg:
      index === 0 && issue.message.startsWith(`unknown field '${key}'`)
        ? `${where}${issue.message}`
        : `${where}unknown field '${key}'`,
    code: 'invalid_request',
    fields: [[...parent, key]],
  }));
}

/**
 * The answer for zod issues: 400, one detail per issue (per unknown field), each naming its field
 * path; past MAX_LISTED_PROBLEMS, one last detail counts the problems left out.
 */
export function zodIssuesToAnswer(issues: readonly z.core.$ZodIssue[]): HttpErrorAnswer {
  const detail: Detail[] = [];
  let problems = 0;
  for (const issue of issues) {
    const room = MAX_LISTED_PROBLEMS - detail.length;
    if (issue.code === 'unrecognized_keys') {
      problems += issue.keys.length;
      if (room > 0) detail.push(...unknownFieldDetails(issue, room));
      continue;
    }
    problems += 1;
    if (room > 0) {
      const path = issuePath(issue);
      detail.push({ msg: issueMessage(issue, path), code: 'invalid_request', fields: [path] });
    }
  }
  const left = problems - detail.length;
  if (left > 0) {
    detail.push({ msg: `and ${left} more problem${left === 1 ? '' : 's'}`, code: 'invalid_request' });
  }
  return { status: 400, body: { detail } };
}

/** Maps any thrown value to the HTTP answer. */
export function mapErrorToHttp(error: unknown): HttpErrorAnswer {
  if (error instanceof HttpError) return answer(error.status, error.message, error.code);
  if (isZodError(error)) return zodIssuesToAnswer(error.issues);
  // dstack answers a missing or bad token with 403, as it does a lack of access; the code tells them apart.
  if (NotAuthenticatedError.isInstance(error)) return answer(403, error.message, 'not_authenticated');
  if (ForbiddenError.isInstance(error)) return answer(403, error.message, 'forbidden');
  // dstack's "not found" is a client error (400 `resource_not_exists`), which its client raises as
  // ResourceNotExistsError (a 404 is only for a route that does not exist).
  if (ResourceNotFoundError.isInstance(error)) return answer(400, error.message, error.code);
  if (InvalidCredentialsError.isInstance(error)) return answer(400, error.message, error.code, error.fields);
  if (ServerClientError.isInstance(error)) return answer(400, error.message, error.code, error.fields);
  if (ConfigurationError.isInstance(error)) {
    return answer(
      400,
      error.message,
      'invalid_configuration',
      error.path.length > 0 ? [error.path] : undefined,
    );
  }
  if (NoCapacityError.isInstance(error)) return answer(400, error.message, 'no_offers');
  const message = error instanceof Error ? (error.stack ?? error.message) : String(error);
  return { ...answer(500, 'Internal server error', 'server_error'), logMessage: message };
}
