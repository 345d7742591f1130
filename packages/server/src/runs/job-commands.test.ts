import { describe, expect, it } from 'vitest';
import { hostJobCommandLine, jobCommandLine, ShellWordsError, splitShellWords } from './job-commands.js';

/** dstack 0.21's commands in its base image for Python `python` (`_dstack_image_commands`), joined. */
function dstackVenvCommands(python: string): string {
  return [
    "eval $(echo 'export DSTACK_VENV_DIR=/dstack/venv' | sudo tee -a /dstack/profile)",
    'sudo rm -rf $DSTACK_VENV_DIR',
    'sudo mkdir $DSTACK_VENV_DIR',
    'sudo chown $(id -u):$(id -g) $DSTACK_VENV_DIR',
    `uv venv -q --prompt dstack -p ${python} --seed $DSTACK_VENV_DIR`,
    "eval $(echo '. $DSTACK_VENV_DIR/bin/activate' | sudo tee -a /dstack/profile)",
  ].join(' && ');
}

describe("a job's command line, as dstack's job configurator makes it", () => {
  it("runs the commands under `bash -i -c` in dstack's base image, after making the venv of `python:`", () => {
    expect(jobCommandLine({ python: '3.10' }, ['pip list', 'python train.py'])).toEqual([
      '/bin/bash',
      '-i',
      '-c',
      `${dstackVenvCommands('3.10')} && pip list && python train.py`,
    ]);
    // No `python:`: the Python of dstack's server image.
    expect(jobCommandLine({}, ['true'])[3]).toBe(`${dstackVenvCommands('3.11')} && true`);
  });

  it('runs them under `sh -i -c` in an image of the configuration, with nothing added', () => {
    expect(jobCommandLine({ image: 'ubuntu' }, ['echo a', 'echo b'])).toEqual([
      '/bin/sh',
      '-i',
      '-c',
      'echo a && echo b',
    ]);
  });

  it('keeps a background command in braces, as dstack joins them', () => {
    expect(jobCommandLine({ image: 'ubuntu' }, ['  serve &  ', 'wait'])[3]).toBe('{ serve & } && wait');
  });

  it('takes `shell:` (sh and bash in /bin, else the absolute path)', () => {
    expect(jobCommandLine({ image: 'ubuntu', shell: 'bash' }, ['x']).slice(0, 3)).toEqual([
      '/bin/bash',
      '-i',
      '-c',
    ]);
    expect(jobCommandLine({ shell: 'sh' }, ['x']).slice(0, 2)).toEqual(['/bin/sh', '-i']);
    expect(jobCommandLine({ image: 'z', shell: '/usr/bin/zsh' }, ['x'])[0]).toBe('/usr/bin/zsh');
  });

  it("starts dockerd first with `docker: true` (dstack's dind image has bash)", () => {
    expect(jobCommandLine({ docker: true }, ['docker run hello-world'])).toEqual([
      '/bin/bash',
      '-i',
      '-c',
      'start-dockerd && docker run hello-world',
    ]);
  });

  it('runs an entrypoint with the commands as its arguments, split as a shell would, nothing added', () => {
    expect(jobCommandLine({ entrypoint: 'python -m "http.server" \'8000\'' }, ['--bind', '0.0.0.0'])).toEqual(
      ['python', '-m', 'http.server', '8000', '--bind', '0.0.0.0'],
    );
    expect(jobCommandLine({ entrypoint: 'sleep infinity' }, [])).toEqual(['sleep', 'infinity']);
  });

  it('is empty without commands or entrypoint (the image would run its own)', () => {
    expect(jobCommandLine({ image: 'nginx' }, [])).toEqual([]);
  });

  it('on a host without containers: no venv, no -i, /bin/sh unless `shell:` says', () => {
    expect(hostJobCommandLine({ python: '3.12' }, ['echo a', 'echo b'])).toEqual([
      '/bin/sh',
      '-c',
      'echo a && echo b',
    ]);
    expect(hostJobCommandLine({ shell: 'bash' }, ['echo $BASH_VERSION'])).toEqual([
      '/bin/bash',
      '-c',
      'echo $BASH_VERSION',
    ]);
    expect(hostJobCommandLine({ entrypoint: 'env' }, ['A=1'])).toEqual(['env', 'A=1']);
  });
});

describe('splitShellWords (Python shlex.split, which dstack applies to entrypoint)', () => {
  it('splits on blanks and honours quotes and escapes; `#` is no comment', () => {
    expect(splitShellWords(`a  'b c' "d \\"e\\" \\n" f\\ g h#i # j`)).toEqual([
      'a',
      'b c',
      'd "e" \\n',
      'f g',
      'h#i',
      '#',
      'j',
    ]);
    expect(splitShellWords(`x''y ""`)).toEqual(['xy', '']);
  });

  it('refuses an open quote', () => {
    expect(() => splitShellWords(`echo 'open`)).toThrow(ShellWordsError);
    expect(() => splitShellWords(`echo "open`)).toThrow('No closing quotation');
  });
});
