/**
 * For tests: an upgrade request as a WebSocket client sends it, without a WebSocket library.
 * What follows the 101 is read and written as raw bytes on the socket.
 */
import { request as httpRequest, type IncomingMessage, type OutgoingHttpHeaders } from 'node:http';
import type { Socket } from 'node:net';

/** The server switched protocols, or answered as to any request. */
export type UpgradeResult =
  | { kind: 'switched'; response: IncomingMessage; socket: Socket; head: Buffer }
  | { kind: 'answered'; response: IncomingMessage; body: string };

/** The `Sec-WebSocket-Key` the requests send (the RFC 6455 example). */
export const WEBSOCKET_KEY = 'dGhlIHNhbXBsZSBub25jZQ==';

/** Sends `GET url` asking for `Upgrade: websocket`; rejects when the connection fails or is cut. */
export function requestUpgrade(url: string, headers: OutgoingHttpHeaders = {}): Promise<UpgradeResult> {
  return new Promise((resolve, reject) => {
    const request = httpRequest(url, {
      headers: {
        connection: 'Upgrade',
        upgrade: 'websocket',
        'sec-websocket-key': WEBSOCKET_KEY,
        'sec-websocket-version': '13',
        ...headers,
      },
    });
    request.once('upgrade', (response: IncomingMessage, socket: Socket, head: Buffer) =>
      resolve({ kind: 'switched', response, socket, head }),
    );
    request.once('response', (response: IncomingMessage) => {
      let body = '';
      response.setEncoding('utf8');
      response.on('data', (chunk: string) => {
        body += chunk;
      });
      response.once('end', () => resolve({ kind: 'answered', response, body }));
      response.once('error', reject);
    });
    request.once('error', reject);
    request.end();
  });
}

/** Resolves with what `socket` receives once it holds `expected` (bytes after the 101 arrive in any cut). */
export function receiveUntil(
  socket: Socket,
  expected: string,
  already: Buffer = Buffer.alloc(0),
): Promise<string> {
  return new Promise((resolve, reject) => {
    let received = already.toString('utf8');
    const check = () => {
      if (!received.includes(expected)) return;
      socket.off('data', onData);
      socket.off('close', onClose);
      resolve(received);
    };
    const onData = (chunk: Buffer) => {
      received += chunk.toString('utf8');
      check();
    };
    const onClose = () =>
      reject(new Error(`The connection closed before "${expected}"; received "${received}"`));
    socket.on('data', onData);
    socket.once('close', onClose);
    check();
  });
}
