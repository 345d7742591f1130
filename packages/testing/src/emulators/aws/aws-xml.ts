/**
 * XML documents as the AWS SDK parses them: EC2 Query answers (`<XResponse>` with `xxxSet/item`
 * lists and no Result wrapper), EC2 error documents (`Response/Errors/Error`, `RequestID`), and
 * the awsQuery documents of STS (`XResult` wrapper, `ErrorResponse`).
 */
import { randomUUID } from 'node:crypto';
import type { EmulatorResponse } from '../../emulator/emulator-responses.js';
import { xml } from '../../emulator/emulator-responses.js';

/**
 * A value rendered as XML: an object's members become elements (undefined ones are left out),
 * an array becomes `<item>` elements, scalars become text.
 */
export type XmlValue = string | number | boolean | undefined | readonly XmlValue[] | XmlObject;
export interface XmlObject {
  readonly [element: string]: XmlValue;
}

export const EC2_XML_NAMESPACE = 'http://ec2.amazonaws.com/doc/2016-11-15/';
export const STS_XML_NAMESPACE = 'https://sts.amazonaws.com/doc/2011-06-15/';

export function escapeXml(text: string): string {
  return text
    .replace(/&/g, '&amp;')
    .replace(/</g, '&lt;')
    .replace(/>/g, '&gt;')
    .replace(/"/g, '&quot;')
    .replace(/'/g, '&apos;');
}

/** The members of `value` as XML elements (no enclosing element). */
export function renderXmlMembers(value: XmlObject): string {
  return Object.entries(value)
    .map(([name, member]) => renderXmlElement(name, member))
    .join('');
}

export function renderXmlElement(name: string, value: XmlValue): string {
  if (value === undefined) return '';
  if (Array.isArray(value)) {
    return `<${name}>${value.map((item) => renderXmlElement('item', item)).join('')}</${name}>`;
  }
  if (typeof value === 'object') return `<${name}>${renderXmlMembers(value as XmlObject)}</${name}>`;
  return `<${name}>${escapeXml(String(value))}</${name}>`;
}

/** The headers every AWS answer carries. */
function requestIdHeaders(requestId: string): Record<string, string> {
  return { 'x-amzn-requestid': requestId };
}

/** A successful EC2 answer: `<ActionResponse xmlns=…><requestId/>members…</ActionResponse>`. */
export function ec2Response(action: string, members: XmlObject): EmulatorResponse {
  const requestId = randomUUID();
  const root = `${action}Response`;
  return xml(
    `<?xml version="1.0" encoding="UTF-8"?>\n<${root} xmlns="${EC2_XML_NAMESPACE}"><requestId>${requestId}</requestId>${renderXmlMembers(members)}</${root}>`,
    200,
    requestIdHeaders(requestId),
  );
}

/** An EC2 error document, e.g. `ec2Error(400, 'InvalidInstanceID.NotFound', "The instance ID 'i-1' does not exist")`. */
export function ec2Error(status: number, code: string, message: string): EmulatorResponse {
  const requestId = randomUUID();
  return xml(
    `<?xml version="1.0" encoding="UTF-8"?>\n<Response><Errors><Error><Code>${escapeXml(code)}</Code><Message>${escapeXml(message)}</Message></Error></Errors><RequestID>${requestId}</RequestID></Response>`,
    status,
    requestIdHeaders(requestId),
  );
}

/** A successful awsQuery (STS) answer: `<ActionResponse><ActionResult>…</ActionResult><ResponseMetadata/>`. */
export function awsQueryResponse(action: string, namespace: string, result: XmlObject): EmulatorResponse {
  const requestId = randomUUID();
  return xml(
    `<${action}Response xmlns="${namespace}">${renderXmlElement(`${action}Result`, result)}<ResponseMetadata><RequestId>${requestId}</RequestId></ResponseMetadata></${action}Response>`,
    200,
    requestIdHeaders(requestId),
  );
}

/** An awsQuery (STS) error document. */
export function awsQueryError(
  status: number,
  namespace: string,
  code: string,
  message: string,
  type: 'Sender' | 'Receiver' = 'Sender',
): EmulatorResponse {
  const requestId = randomUUID();
  return xml(
    `<ErrorResponse xmlns="${namespace}"><Error><Type>${type}</Type><Code>${escapeXml(code)}</Code><Message>${escapeXml(message)}</Message></Error><RequestId>${requestId}</RequestId></ErrorResponse>`,
    status,
    requestIdHeaders(requestId),
  );
}

/** An AWS JSON 1.1 answer (Service Quotas, Pricing). */
export function awsJsonResponse(value: unknown): EmulatorResponse {
  const requestId = randomUUID();
  return {
    status: 200,
    headers: { 'content-type': 'application/x-amz-json-1.1', ...requestIdHeaders(requestId) },
    body: JSON.stringify(value),
  };
}

/** An AWS JSON 1.1 error: the type in `x-amzn-ErrorType` and `__type`, as the services send it. */
export function awsJsonError(status: number, type: string, message: string): EmulatorResponse {
  const requestId = randomUUID();
  return {
    status,
    headers: {
      'content-type': 'application/x-amz-json-1.1',
      'x-amzn-errortype': `${type}:`,
      ...requestIdHeaders(requestId),
    },
    body: JSON.stringify({ __type: type, message }),
  };
}
