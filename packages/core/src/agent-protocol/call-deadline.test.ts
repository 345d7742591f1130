import { getEventListeners, once } from 'node:events';
import { describe, expect, it } from 'vitest';
import { callDeadline } from './call-deadline.js';

describe('callDeadline', () => {
  it('aborts with a TimeoutError once its time has passed', async () => {
    const deadline = callDeadline(5);
    await once(deadline.signal, 'abort');
    expect(deadline.signal.reason).toBeInstanceOf(DOMException);
    expect((deadline.signal.reason as DOMException).name).toBe('TimeoutError');
  });

  it('aborts with the outer signal’s reason when that aborts first', () => {
    const outer = new AbortController();
    const deadline = callDeadline(60_000, outer.signal);
    outer.abort(new Error('server stopping'));
    expect(deadline.signal.aborted).toBe(true);
    expect((deadline.signal.reason as Error).message).toBe('server stopping');
    deadline.clear();
  });

  it('starts aborted when the outer signal already is', () => {
    const outer = AbortSignal.abort(new Error('gone'));
    const deadline = callDeadline(60_000, outer);
    expect(deadline.signal.aborted).toBe(true);
    deadline.clear();
  });

  it('once cleared, neither its time nor the outer signal aborts it', async () => {
    const outer = new AbortController();
    const deadline = callDeadline(5, outer.signal);
    deadline.clear();
    outer.abort();
    // A later deadline that does fire: the cleared one's time has passed by then too.
    await once(callDeadline(20).signal, 'abort');
    expect(deadline.signal.aborted).toBe(false);
  });

  it('leaves no listener on the outer signal once cleared', () => {
    const outer = new AbortController();
    const deadlines = Array.from({ length: 100 }, () => callDeadline(60_000, outer.signal));
    expect(getEventListeners(outer.signal, 'abort')).toHaveLength(100);
    for (const deadline of deadlines) deadline.clear();
    expect(getEventListeners(outer.signal, 'abort')).toHaveLength(0);
  });
});
