/**
 * The errors of requests to the server (`server-errors.ts`) and the reading of an error answer,
 * checked with core's `ApiErrorSchema`.
 */
import { ApiErrorSchema } from '@dstack/core';
import type { ApiErrorDetail } from './server-errors.js';

export * from './server-errors.js';

/** Reads dstack's `{"detail": [...]}` body, also the `{"detail": {"msg"}}` and plain-text forms. */
export function parseErrorDetails(statusCode: number, text: string): ApiErrorDetail[] {
  let body: unknown;
  try {
    body = JSON.parse(text);
  } catch {
    const summary = text.trim().slice(0, 200);
    return [
      { message: `HTTP ${statusCode}${summary ? `: ${summary}` : ''}`, code: 'http_error', fields: [] },
    ];
  }
  const parsed = ApiErrorSchema.safeParse(body);
  if (parsed.success) {
    return parsed.data.detail.map((detail) => ({
      message: detail.msg,
      code: detail.code,
      fields: detail.fields ?? [],
    }));
  }
  const detail = (body as { detail?: unknown } | null)?.detail;
  if (typeof detail === 'string') return [{ message: detail, code: 'error', fields: [] }];
  const message = (detail as { msg?: unknown } | undefined)?.msg;
  if (typeof message === 'string') return [{ message, code: 'error', fields: [] }];
  return [{ message: `HTTP ${statusCode}: ${text.slice(0, 200)}`, code: 'http_error', fields: [] }];
}
