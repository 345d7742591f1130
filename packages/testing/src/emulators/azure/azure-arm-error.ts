/** Resource Manager's error document, `{"error": {"code", "message"}}`, with its status. */
import { EmulatorHttpError, json } from '../../emulator/emulator-responses.js';

export class AzureArmError extends EmulatorHttpError {
  constructor(
    status: number,
    readonly code: string,
    message: string,
    headers: Record<string, string> = {},
  ) {
    super(json({ error: { code, message } }, status, headers), `${code}: ${message}`);
  }
}
