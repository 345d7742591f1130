import { ServerClientError } from '@dstack/core';
import { describe, expect, it } from 'vitest';
import { HttpError } from '../http/error-mapping.js';
import { NotAuthenticatedError } from '../security/access-errors.js';
import { openAiErrorAnswer } from './openai-errors.js';

describe('openAiErrorAnswer', () => {
  it("keeps the server's status and code in OpenAI's shape", () => {
    expect(openAiErrorAnswer(new HttpError(404, 'Model m not found', 'model_not_found'))).toEqual({
      status: 404,
      body: {
        error: {
          message: 'Model m not found',
          type: 'invalid_request_error',
          param: null,
          code: 'model_not_found',
        },
      },
    });
    expect(openAiErrorAnswer(new NotAuthenticatedError('Invalid token')).body.error).toEqual({
      message: 'Invalid token',
      type: 'authentication_error',
      param: null,
      code: 'not_authenticated',
    });
    expect(openAiErrorAnswer(new HttpError(503, 'no replica', 'service_unavailable')).body.error.type).toBe(
      'server_error',
    );
  });

  it('names the field as param', () => {
    const answer = openAiErrorAnswer(
      new ServerClientError('model: field required', { code: 'invalid_request', fields: [['model']] }),
    );
    expect(answer.status).toBe(400);
    expect(answer.body.error).toMatchObject({ param: 'model', code: 'invalid_request' });
  });

  it('hides internal errors and says what to log', () => {
    const answer = openAiErrorAnswer(new Error('database is locked'));
    expect(answer.status).toBe(500);
    expect(answer.body.error.message).toBe('Internal server error');
    expect(answer.logMessage).toContain('database is locked');
  });
});
