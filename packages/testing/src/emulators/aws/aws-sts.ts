/** STS GetCallerIdentity (awsQuery protocol): the read-only call that proves a key works. */
import type { EmulatorResponse } from '../../emulator/emulator-responses.js';
import { awsQueryError, awsQueryResponse, STS_XML_NAMESPACE } from './aws-xml.js';

export interface CallerIdentity {
  readonly accountId: string;
  readonly accessKeyId: string;
  /** The IAM user the key belongs to. */
  readonly userName: string;
}

export function handleStsAction(action: string | undefined, identity: CallerIdentity): EmulatorResponse {
  if (action !== 'GetCallerIdentity') {
    return awsQueryError(
      400,
      STS_XML_NAMESPACE,
      'InvalidAction',
      `Could not find operation ${action ?? '(none)'} for version 2011-06-15`,
    );
  }
  return awsQueryResponse('GetCallerIdentity', STS_XML_NAMESPACE, {
    Arn: `arn:aws:iam::${identity.accountId}:user/${identity.userName}`,
    // An IAM user's unique id: AIDA and 17 characters derived from the key.
    UserId: `AIDA${identity.accessKeyId.slice(4).padEnd(17, 'X').slice(0, 17)}`,
    Account: identity.accountId,
  });
}
