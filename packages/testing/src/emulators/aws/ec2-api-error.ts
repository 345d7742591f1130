import { EmulatorHttpError } from '../../emulator/emulator-responses.js';
import { ec2Error } from './aws-xml.js';

/**
 * An error EC2 answers with (its code, HTTP status and message as AWS sends them), thrown from
 * deep inside the emulated EC2 and turned into an error document by the server.
 */
export class Ec2ApiError extends EmulatorHttpError {
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
  ) {
    super(ec2Error(status, code, message), `${code}: ${message}`);
  }
}

export function instanceNotFound(ids: readonly string[]): Ec2ApiError {
  const message =
    ids.length === 1
      ? `The instance ID '${ids[0]}' does not exist`
      : `The instance IDs '${ids.join(', ')}' do not exist`;
  return new Ec2ApiError(400, 'InvalidInstanceID.NotFound', message);
}
