import { describe, expect, it } from 'vitest';
import { terminalLessCommandLine } from './terminal-less-command.js';

describe('terminalLessCommandLine', () => {
  it("runs dstack's interactive shell form without -i: there is no terminal", () => {
    expect(terminalLessCommandLine(['/bin/bash', '-i', '-c', 'a && b'])).toEqual([
      '/bin/bash',
      '-c',
      'a && b',
    ]);
    expect(terminalLessCommandLine(['/bin/sh', '-i', '-c', 'echo x > f'])).toEqual([
      '/bin/sh',
      '-c',
      'echo x > f',
    ]);
  });

  it('leaves any other command line as it is (an entrypoint with its arguments)', () => {
    expect(terminalLessCommandLine(['python', '-i', '-c', 'x', 'extra'])).toEqual([
      'python',
      '-i',
      '-c',
      'x',
      'extra',
    ]);
    expect(terminalLessCommandLine(['/bin/sh', '-c', 'x'])).toEqual(['/bin/sh', '-c', 'x']);
    expect(terminalLessCommandLine(['printf', '-i'])).toEqual(['printf', '-i']);
  });
});
