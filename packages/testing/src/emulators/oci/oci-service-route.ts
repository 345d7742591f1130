/** A route of one OCI service, under `/<service>/<region>/<api version>` on the emulator. */
import type { EmulatorResponse } from '../../emulator/emulator-responses.js';
import type { EmulatorRequest } from '../../emulator/emulator-server.js';
import type { OciRegion } from './oci-emulator-data.js';

export interface OciRequestContext {
  /** The region the request's endpoint is in. */
  readonly region: OciRegion;
}

export interface OciServiceRoute {
  readonly method: string;
  /** After the API version, e.g. `/instances/:instanceId`. */
  readonly path: string;
  handle(request: EmulatorRequest, context: OciRequestContext): EmulatorResponse | Promise<EmulatorResponse>;
}
