import { expect, it } from 'vitest';

it('passes too', () => expect('a'.repeat(2)).toBe('aa'));
