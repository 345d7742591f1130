/**
 * SQLite queries are synchronous: a chain of them made by background work (the pipelines) never
 * waits for I/O, so without yielding it would keep the event loop until it ends. Background work
 * gives the loop back to requests between its queries; a request is answered while it goes on.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { sql } from 'kysely';
import { afterEach, beforeEach, expect, it } from 'vitest';
import { type OpenedDatabase, openDatabase } from './database.js';

/** Far more queries than a few turns of the event loop hold: the chain stops once the request is answered. */
const MAX_QUERIES = 200_000;

let directory: string;
let opened: OpenedDatabase;
let server: Server;

beforeEach(async () => {
  directory = mkdtempSync(join(tmpdir(), 'dstack-background-work-'));
  opened = await openDatabase({ url: `sqlite:///${join(directory, 'server.db')}`, serverDir: directory });
  // A cheap API route: one query, then the answer.
  server = createServer((_request, response) => {
    void sql<{ one: number }>`select 1 as one`.execute(opened.db).then(({ rows }) => {
      response.end(String(rows[0]?.one));
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
});

afterEach(async () => {
  await new Promise((resolve) => server.close(resolve));
  await opened.close();
  rmSync(directory, { recursive: true, force: true });
});

it('answers a request while background work makes a long chain of queries', async () => {
  let answered = false;
  const request = fetch(`http://127.0.0.1:${(server.address() as AddressInfo).port}/`)
    .then((response) => response.text())
    .then((text) => {
      answered = true;
      return text;
    });
  // Background work queries through its own handle of the database.
  let queriesBeforeTheAnswer = 0;
  while (!answered && queriesBeforeTheAnswer < MAX_QUERIES) {
    await sql`select 1`.execute(opened.backgroundDb);
    queriesBeforeTheAnswer += 1;
  }
  expect(await request).toBe('1');
  expect(queriesBeforeTheAnswer).toBeLessThan(MAX_QUERIES);
});

it('resumes only a turn budget of waiting background work per turn of the event loop', async () => {
  // Many workers (a pipeline's) each alternating a query and a millisecond of computation: a turn
  // after they all yielded must not resume every one of them (the request waiting to be read would
  // wait for all of them). Counted per turn, not up to the answer: how many turns a request takes
  // depends on the machine's load, what one turn resumes does not.
  const workers = 100;
  let answered = false;
  let turn = 0;
  let countingTurns = true;
  const countTurn = () => {
    turn += 1;
    if (countingTurns) setImmediate(countTurn);
  };
  setImmediate(countTurn);
  const stepsByTurn = new Map<number, number>();
  const busyFor = (ms: number) => {
    const end = performance.now() + ms;
    while (performance.now() < end) {}
  };
  const chains = Promise.all(
    Array.from({ length: workers }, async () => {
      for (let step = 0; step < 5 && !answered; step++) {
        await sql`select 1`.execute(opened.backgroundDb);
        busyFor(1);
        stepsByTurn.set(turn, (stepsByTurn.get(turn) ?? 0) + 1);
      }
    }),
  );
  const text = await fetch(`http://127.0.0.1:${(server.address() as AddressInfo).port}/`).then((response) =>
    response.text(),
  );
  answered = true;
  await chains;
  countingTurns = false;
  expect(text).toBe('1');
  // Each turn resumes about TURN_BUDGET_MS of one-millisecond steps, far fewer than the workers waiting.
  expect(stepsByTurn.size).toBeGreaterThan(1);
  expect(Math.max(...stepsByTurn.values())).toBeLessThan(workers / 2);
});

it('answers a cheap request while another request makes long chains of queries', async () => {
  // Requests' pieces wait too once a turn has had its budget, behind other requests' only: work a
  // request (or a burst of them, ready in one turn) starts no longer keeps the event loop until it
  // ends. Here one request runs ten chains of queries at once, as a burst of applies would.
  const chains = 10;
  const queriesEach = 3_000;
  let queriesDone = 0;
  const longRoute = createServer((_request, response) => {
    void Promise.all(
      Array.from({ length: chains }, async () => {
        for (let query = 0; query < queriesEach; query++) {
          await sql`select 1`.execute(opened.db);
          queriesDone += 1;
        }
      }),
    ).then(() => response.end('done'));
  });
  await new Promise<void>((resolve) => longRoute.listen(0, '127.0.0.1', resolve));
  try {
    const long = fetch(`http://127.0.0.1:${(longRoute.address() as AddressInfo).port}/`).then((response) =>
      response.text(),
    );
    while (queriesDone === 0) await new Promise((resolve) => setTimeout(resolve, 1));
    const cheap = await fetch(`http://127.0.0.1:${(server.address() as AddressInfo).port}/`).then(
      (response) => response.text(),
    );
    const doneAtTheAnswer = queriesDone;
    expect(cheap).toBe('1');
    expect(await long).toBe('done');
    expect(doneAtTheAnswer).toBeLessThan((chains * queriesEach) / 2);
  } finally {
    await new Promise((resolve) => longRoute.close(resolve));
  }
});
