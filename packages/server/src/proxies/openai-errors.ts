/**
 * Errors of the model endpoint in OpenAI's shape, `{"error":{"message","type","param","code"}}`:
 * it is an OpenAI base URL, and OpenAI clients read `error.message` (the official `openai`
 * package puts it in its `APIError`). Status and code come from the server's one mapping
 * (http/error-mapping.ts), but for a refused token (401 here, 403 in dstack's API); only the
 * body's shape differs.
 */
import { mapErrorToHttp } from '../http/error-mapping.js';

export interface OpenAiErrorBody {
  error: { message: string; type: string; param: string | null; code: string | null };
}

export interface OpenAiErrorAnswer {
  status: number;
  body: OpenAiErrorBody;
  /** Set for 500s: what to log (the client sees only a generic message). */
  logMessage?: string;
}

/** OpenAI's `type` for a status: what its own API answers with it. */
function errorType(status: number): string {
  if (status === 401) return 'authentication_error';
  if (status === 403) return 'permission_error';
  if (status === 429) return 'rate_limit_error';
  if (status >= 500) return 'server_error';
  return 'invalid_request_error';
}

/** Maps any thrown value to the model endpoint's answer. */
export function openAiErrorAnswer(error: unknown): OpenAiErrorAnswer {
  const mapped = mapErrorToHttp(error);
  const [first] = mapped.body.detail;
  const field = first?.fields?.[0];
  // dstack's API answers a refused token 403; OpenAI's clients take only 401 as a bad API key
  // (the official package's AuthenticationError).
  const status = first?.code === 'not_authenticated' ? 401 : mapped.status;
  return {
    status,
    body: {
      error: {
        message: mapped.body.detail.map((detail) => detail.msg).join('; '),
        type: errorType(status),
        param: field && field.length > 0 ? field.join('.') : null,
        code: first?.code ?? null,
      },
    },
    ...(mapped.logMessage ? { logMessage: mapped.logMessage } : {}),
  };
}
