// biome-ignore-all lint/suspicious/noTemplateCurlyInString: these tests are about dstack's ${{ }} references, written as users write them.
import { parseConfiguration, type RunConfiguration } from '@dstack/core';
import { describe, expect, it } from 'vitest';
import { applyRunOverrides, shellQuote } from './run-overrides.js';

function parse(text: string): RunConfiguration {
  return parseConfiguration(text) as RunConfiguration;
}

describe('applyRunOverrides', () => {
  it('interpolates ${{ env.X }} in registry_auth and probes, leaving secrets for the server', () => {
    const configuration = parse(
      [
        'type: service',
        'port: 8000',
        'image: registry.example/app',
        'commands: [serve]',
        'env: [USER_NAME, TOKEN=t0k]',
        'registry_auth:',
        '  username: ${{ env.USER_NAME }}',
        '  password: ${{ secrets.registry_password }}',
        'probes:',
        '  - type: http',
        '    url: /health?u=${{ env.USER_NAME }}',
        '    headers:',
        '      - name: Authorization',
        '        value: Bearer ${{ env.TOKEN }}',
        '',
      ].join('\n'),
    );
    applyRunOverrides(configuration, {}, [], { USER_NAME: 'alice' });
    expect(configuration.registry_auth).toEqual({
      username: 'alice',
      password: '${{ secrets.registry_password }}',
    });
    expect(configuration.type === 'service' && configuration.probes?.[0]).toMatchObject({
      url: '/health?u=alice',
      headers: [{ name: 'Authorization', value: 'Bearer t0k' }],
    });
  });

  it('puts run arguments in commands, keeps secrets and refuses ${{ env.X }} there, as dstack', () => {
    const configuration = parse(
      'type: task\ncommands:\n  - train ${{ run.args }} --key ${{ secrets.k }} $$HOME\n',
    );
    applyRunOverrides(configuration, {}, ['--lr', '0.1', "it's"], {});
    expect((configuration as { commands: string[] }).commands).toEqual([
      `train --lr 0.1 'it'"'"'s' --key \${{ secrets.k }} $HOME`,
    ]);
    const withEnv = parse('type: task\nenv: [A=1]\ncommands:\n  - echo ${{ env.A }}\n');
    expect(() => applyRunOverrides(withEnv, {}, [], {})).toThrow(
      "Failed to interpolate due to missing vars: ['env.A']",
    );
  });

  it('lets -e override the file and fill bare names; an unset bare name is refused by name', () => {
    const configuration = parse('type: task\nenv: [A=file, B]\ncommands: [x]\n');
    applyRunOverrides(configuration, { env: ['A=flag', 'C', 'D='] }, [], { B: 'b', C: 'c' });
    expect(configuration.env).toEqual({ A: 'flag', B: 'b', C: 'c', D: '' });
    expect(() => applyRunOverrides(parse('type: task\nenv: [MISSING]\ncommands: [x]\n'), {}, [], {})).toThrow(
      'Environment variable MISSING is not set',
    );
    expect(() => applyRunOverrides(parse('type: task\ncommands: [x]\n'), { env: ['1A=x'] }, [], {})).toThrow(
      "--env: expected KEY[=VALUE], got '1A=x'",
    );
  });

  it('quotes run arguments as shlex.join', () => {
    expect(['a', '', 'b c', 'd$e', 'f=g,h'].map(shellQuote)).toEqual(['a', "''", "'b c'", "'d$e'", 'f=g,h']);
  });
});
