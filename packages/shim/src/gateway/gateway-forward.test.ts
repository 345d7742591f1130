/**
 * forwardRequest on loopback: a bodiless request goes on over the service's replicas of the moment,
 * also through a moment without any, and the gateway's 502 says why each replica failed.
 */
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import { createServer as createTcpServer } from 'node:net';
import { request } from 'undici';
import { afterEach, describe, expect, it } from 'vitest';
import { type ForwardOptions, forwardRequest } from './gateway-forward.js';
import { listenOnLoopback } from './gateway-test.test.helpers.js';

describe('forwardRequest', () => {
  const closers: Array<() => void> = [];
  afterEach(() => {
    for (const close of closers.splice(0)) close();
  });

  /** A gateway-like front whose every request is forwarded with `options`; its URL. */
  async function front(options: () => ForwardOptions): Promise<string> {
    const server = createServer((incoming: IncomingMessage, response: ServerResponse) =>
      forwardRequest(incoming, response, options()),
    );
    closers.push(() => server.close());
    return `http://127.0.0.1:${await listenOnLoopback(server)}`;
  }

  async function replicaAnswering(text: string): Promise<string> {
    const server = createServer((_incoming, response) => response.end(text));
    closers.push(() => server.close());
    return `http://127.0.0.1:${await listenOnLoopback(server)}`;
  }

  /** Accepts connections and drops them unanswered, as a replica going away. */
  async function replicaDropping(): Promise<string> {
    const server = createTcpServer((socket) => socket.destroy());
    closers.push(() => server.close());
    return `http://127.0.0.1:${await listenOnLoopback(server)}`;
  }

  it('waits through rounds without a replica for the next one, and settles once answered', async () => {
    const dropping = await replicaDropping();
    const answering = await replicaAnswering('ok');
    // The service's replicas at each round: none twice (its one replica judged unready), then one.
    const rounds: string[][] = [[], [], [answering]];
    let settled = 0;
    const url = await front(() => ({
      replicas: [dropping],
      replicasNow: () => rounds.shift() ?? [],
      dropAuthorization: false,
      protocol: 'http',
      settled: () => {
        settled += 1;
      },
    }));
    const answer = await request(url);
    expect({ status: answer.statusCode, body: await answer.body.text() }).toEqual({
      status: 200,
      body: 'ok',
    });
    expect(rounds).toEqual([]);
    expect(settled).toBe(1);
  });

  it("names each replica's failure in its 502 once the window is over", async () => {
    const dropping = await replicaDropping();
    const url = await front(() => ({
      replicas: [dropping],
      dropAuthorization: false,
      protocol: 'http',
      retryWindowMs: 0,
    }));
    const answer = await request(url);
    expect(answer.statusCode).toBe(502);
    expect(await answer.body.json()).toEqual({
      detail: [{ msg: `No replica of the service answered (${dropping}: ECONNRESET)` }],
    });
  });
});
