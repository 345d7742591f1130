/**
 * Text from the server reaches the terminal through the CLI's one sanitizer: names, statuses
 * and error messages holding escape sequences, CR LF or NUL are printed as visible escapes.
 */
import { describe, expect, it } from 'vitest';
import { makeFleet, makeOffer, makeRun } from '../__fixtures__/api-objects.js';
import { CLI_TEST_TIMEOUT_MS } from '../__fixtures__/cli-harness.js';
import { HttpAnswer } from '../__fixtures__/fake-dstack-server.js';
import { fakeServerCli } from '../__fixtures__/fake-server-cli.js';

/** Control characters a terminal acts on, except the newlines that end lines. */
// biome-ignore lint/suspicious/noControlCharactersInRegex: finding control characters is the point
const RAW_CONTROL = /[\u0000-\u0009\u000b-\u001f\u007f-\u009f\u202a-\u202e]/;

/** Red, a carriage return and line feed, a NUL: what a hostile name would hold. */
const HOSTILE = 'evil\u001b[31m\r\nname\u0000';
/** How the CLI shows it. */
const SHOWN = 'evil\\x1b[31m\\r\\nname\\x00';

const cli = fakeServerCli();

describe('text from the server', { timeout: CLI_TEST_TIMEOUT_MS }, () => {
  it('dstack fleet list shows control characters in names as escapes', async () => {
    const fleet = makeFleet(HOSTILE, 1);
    Object.assign(fleet.instances[0] ?? {}, { region: 'eu\u009b2J', status: 'idle' });
    await cli.startServer({ 'fleets/list': () => [fleet] });
    const result = await cli.harness.run(['fleet', 'list']);
    expect(result).toMatchObject({ code: 0, stderr: '' });
    expect(result.stdout).not.toMatch(RAW_CONTROL);
    const lines = result.stdout.trimEnd().split('\n');
    expect(lines).toHaveLength(2);
    expect(lines[1]?.startsWith(`${SHOWN}  1  `)).toBe(true);
    expect(lines[1]).toContain('local (eu\\x9b2J)');
  });

  it('dstack ps shows escapes in run names and errors, and its JSON stays raw-control free', async () => {
    const run = makeRun({ name: HOSTILE, status: 'failed', error: 'boom\r\u001b[2Kfine\u202e' });
    await cli.startServer({ 'runs/list': () => [run] });
    const table = await cli.harness.run(['ps', '-a', '-v']);
    expect(table).toMatchObject({ code: 0, stderr: '' });
    expect(table.stdout).not.toMatch(RAW_CONTROL);
    expect(table.stdout).toContain(SHOWN);
    expect(table.stdout).toContain('boom\\r\\x1b[2Kfine\\u202e');

    const json = await cli.harness.run(['ps', '-a', '--format', 'json']);
    expect(json.code).toBe(0);
    expect(json.stdout).not.toMatch(RAW_CONTROL);
    expect(JSON.parse(json.stdout)[0].error).toBe('boom\r\u001b[2Kfine\u202e');
  });

  it('dstack offer shows escapes in backend and instance names', async () => {
    await cli.startServer({
      'offers/list': () => ({ offers: [makeOffer({ region: HOSTILE, name: 'big\u0007' })], total_offers: 1 }),
    });
    const result = await cli.harness.run(['offer']);
    expect(result).toMatchObject({ code: 0, stderr: '' });
    expect(result.stdout).not.toMatch(RAW_CONTROL);
    expect(result.stdout).toContain(SHOWN);
    expect(result.stdout).toContain('big\\x07');
  });

  it("an error message of the server is shown with escapes, with its field's path", async () => {
    await cli.startServer({
      'fleets/delete': () =>
        new HttpAnswer(400, {
          detail: [
            { msg: `fleet ${HOSTILE} is busy\u001b]0;pwned\u0007`, code: 'busy', fields: [[HOSTILE]] },
          ],
        }),
    });
    const result = await cli.harness.run(['fleet', 'delete', 'gpus', '-y']);
    expect(result.code).toBe(1);
    expect(result.stderr).not.toMatch(RAW_CONTROL);
    expect(result.stderr).toBe(`error: ${SHOWN}: fleet ${SHOWN} is busy\\x1b]0;pwned\\x07\n`);
  });
});
