import { describe, expect, it } from 'vitest';
import { MODEL_NAME_MAX_BYTES, ModelFieldScanner } from './json-model-field.js';

/** The scan of `body` fed in chunks of `size` bytes: the model, or the error's message. */
function scan(body: string | Buffer, size = Number.MAX_SAFE_INTEGER): string {
  const bytes = typeof body === 'string' ? Buffer.from(body) : body;
  const scanner = new ModelFieldScanner();
  try {
    for (let start = 0; start < bytes.length; start += size) {
      const model = scanner.push(bytes.subarray(start, start + size));
      if (model !== null) return model;
    }
    throw scanner.endedError();
  } catch (error) {
    return `error: ${(error as Error).message}`;
  }
}

/** A small deterministic generator (mulberry32), so that a failure can be replayed. */
function random(seed: number): () => number {
  let state = seed;
  return () => {
    state = (state + 0x6d2b79f5) | 0;
    let value = Math.imul(state ^ (state >>> 15), 1 | state);
    value = (value + Math.imul(value ^ (value >>> 7), 61 | value)) ^ value;
    return ((value ^ (value >>> 14)) >>> 0) / 4294967296;
  };
}

/** Any JSON value, with strings that hold quotes, escapes, brackets and non-ASCII characters. */
function randomValue(next: () => number, depth: number): unknown {
  const kind = Math.floor(next() * (depth > 2 ? 4 : 6));
  const characters = [...'"\\{}[],:model é✓\n\u0000'];
  const text = () =>
    Array.from(
      { length: Math.floor(next() * 6) },
      () => characters[Math.floor(next() * characters.length)],
    ).join('');
  if (kind === 0) return text();
  if (kind === 1) return Math.round(next() * 1e6) / 100 - 5000;
  if (kind === 2) return [true, false, null][Math.floor(next() * 3)];
  if (kind === 3) return next() < 0.5 ? 'model' : { model: text() };
  if (kind === 4) return Array.from({ length: Math.floor(next() * 4) }, () => randomValue(next, depth + 1));
  const object: Record<string, unknown> = {};
  for (let index = 0; index < Math.floor(next() * 4); index++) object[text()] = randomValue(next, depth + 1);
  return object;
}

describe('ModelFieldScanner', () => {
  it('finds the top-level model wherever it is, however the body is cut into chunks', () => {
    const bodies = [
      '{"model":"org/alpha","messages":[]}',
      ' \n{ "messages" : [ {"role":"user","model":"nested","content":"a \\"model\\": \\"x\\" ] }"} ] ,\t"model" : "org/alpha" }',
      '{"input":[[1,2],[3]],"n":-1.5e3,"stream":true,"user":null,"model":"org/alpha"}',
      '{"\\u006dodel":"org/alpha"}',
      '{"model":"org\\/alpha"}',
    ];
    for (const body of bodies) {
      for (const size of [1, 2, 3, 7, body.length])
        expect(scan(body, size), `${body} / ${size}`).toBe('org/alpha');
    }
    expect(scan('{"model":"é✓ \\u00e9 \\ud83d\\ude00"}', 1)).toBe('é✓ é 😀');
  });

  it('agrees with JSON.parse on random objects', () => {
    const next = random(28);
    for (let round = 0; round < 500; round++) {
      const object = randomValue(next, 1) as Record<string, unknown>;
      const fields = typeof object === 'object' && object !== null && !Array.isArray(object) ? object : {};
      const model = `m-${round}-"é\\`;
      const entries = Object.entries(fields).filter(([key]) => key !== 'model');
      entries.splice(Math.floor(next() * (entries.length + 1)), 0, ['model', model]);
      const body = JSON.stringify(Object.fromEntries(entries), null, round % 2 === 0 ? undefined : 1);
      expect(JSON.parse(body).model).toBe(model);
      expect(scan(body, 1 + Math.floor(next() * 9)), body).toBe(model);
    }
  });

  it('stops at the model: what follows is not read', () => {
    expect(scan('{"model":"m", this is not JSON')).toBe('m');
  });

  it('refuses bodies that cannot carry a model, naming the field', () => {
    expect(scan('')).toBe('error: Malformed JSON body: the body is empty; expected a JSON object at byte 0');
    expect(scan('{"model":')).toBe(
      'error: Malformed JSON body: the body ends before its top-level object is closed at byte 9',
    );
    expect(scan('{"model":"m')).toMatch(/ends before its top-level object is closed/);
    expect(scan('[{"model":"m"}]')).toBe('error: model: field required (the body must be a JSON object)');
    expect(scan('"model"')).toBe('error: model: field required (the body must be a JSON object)');
    expect(scan('{}')).toBe('error: model: field required');
    expect(scan('{"input":"text","nested":{"model":"m"}}')).toBe('error: model: field required');
    expect(scan('{"model":1}')).toBe('error: model: expected the name of a model (a string)');
    expect(scan('{"model":null}')).toBe('error: model: expected the name of a model (a string)');
    expect(scan('{"model":""}')).toBe('error: model: expected the name of a model (a string)');
    expect(scan('{"a" 1,"model":"m"}')).toBe(
      "error: Malformed JSON body: expected ':' after a field name at byte 5",
    );
    expect(scan('{"a":1 "model":"m"}')).toBe(
      "error: Malformed JSON body: expected ',' or '}' after a value at byte 7",
    );
    expect(scan('{model:"m"}')).toBe(
      'error: Malformed JSON body: expected a field name in double quotes at byte 1',
    );
    expect(scan('{"a":,"model":"m"}')).toBe('error: Malformed JSON body: expected a value at byte 5');
    expect(scan('{"model":"\\x"}')).toBe(
      'error: Malformed JSON body: the model is not a valid JSON string at byte 12',
    );
  });

  it('keeps at most a bounded model name', () => {
    expect(scan(`{"model":"${'m'.repeat(MODEL_NAME_MAX_BYTES)}"}`)).toBe('m'.repeat(MODEL_NAME_MAX_BYTES));
    expect(scan(`{"model":"${'m'.repeat(MODEL_NAME_MAX_BYTES + 1)}"}`)).toBe(
      `error: model: longer than ${MODEL_NAME_MAX_BYTES} bytes`,
    );
    // A long field name is skipped, not kept: it is not `model`.
    expect(scan(`{"${'k'.repeat(100_000)}":1,"model":"m"}`, 1000)).toBe('m');
  });
});
