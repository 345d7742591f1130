/** A non-2xx answer from an agent's HTTP API. */
export class AgentApiError extends Error {
  override readonly name = 'AgentApiError';

  constructor(
    message: string,
    /** The HTTP status. */
    readonly statusCode: number,
    /** The response body as text (usually `{"detail": "..."}`). */
    readonly body: string,
  ) {
    super(message);
  }
}
