// biome-ignore-all lint/suspicious/noTemplateCurlyInString: these tests are about dstack's ${{ }} references, written as users write them.
import { describe, expect, it } from 'vitest';
import { isValidGroupsIpReference, VariablesInterpolator } from './variables-interpolator.js';

describe('VariablesInterpolator (dstack utils/interpolator.py)', () => {
  const interpolator = new VariablesInterpolator({ env: { A: '1', B: 'two' }, run: { args: "x 'y z'" } }, [
    'secrets',
  ]);

  it('replaces known references, with or without spaces', () => {
    expect(interpolator.interpolateOrError('a=${{ env.A }} b=${{env.B}} args=${{ run.args }}')).toBe(
      "a=1 b=two args=x 'y z'",
    );
  });

  it('keeps skipped namespaces as written and unescapes $$', () => {
    expect(interpolator.interpolateOrError('${{ secrets.token }} $$HOME $${{ env.A }} $PATH')).toBe(
      '${{ secrets.token }} $HOME ${{ env.A }} $PATH',
    );
  });

  it('lists missing references as dstack does, and refuses illegal names and open patterns', () => {
    expect(() => interpolator.interpolateOrError('${{ env.C }} ${{ run.x }}')).toThrow(
      "Failed to interpolate due to missing vars: ['env.C', 'run.x']",
    );
    expect(() => interpolator.interpolateOrError('${{ env }}')).toThrow('Illegal reference name: env');
    expect(() => interpolator.interpolateOrError('${{ secrets.a.b }}')).toThrow(
      'Illegal reference name: secrets.a.b',
    );
    expect(() => interpolator.interpolateOrError('${{ env.A')).toThrow('No pattern closing: ${{ env.A');
  });

  it('accepts groups IP references with their own validator', () => {
    const groups = new VariablesInterpolator({}, { groups: isValidGroupsIpReference });
    expect(groups.interpolateOrError('${{ groups[0].nodes[1].IP_ADDRESS }}')).toBe(
      '${{ groups[0].nodes[1].IP_ADDRESS }}',
    );
    expect(() => groups.interpolateOrError('${{ groups[0].nodes.IP }}')).toThrow('Illegal reference name');
  });
});
