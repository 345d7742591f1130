/** Generated run names, dstack-style: `<adjective>-<animal>-<n>`. */
import { randomInt } from 'node:crypto';

const ADJECTIVES = [
  'brave',
  'calm',
  'clever',
  'eager',
  'fancy',
  'gentle',
  'happy',
  'jolly',
  'kind',
  'lively',
  'nice',
  'proud',
  'quick',
  'silly',
  'swift',
  'witty',
];
const ANIMALS = [
  'ant',
  'bat',
  'cat',
  'crab',
  'deer',
  'duck',
  'eel',
  'fox',
  'goat',
  'hawk',
  'lynx',
  'moth',
  'owl',
  'seal',
  'swan',
  'wolf',
];

export function generateRunName(): string {
  const adjective = ADJECTIVES[randomInt(ADJECTIVES.length)];
  const animal = ANIMALS[randomInt(ANIMALS.length)];
  return `${adjective}-${animal}-${randomInt(1, 100)}`;
}
