/** The search query's filters, order, type and limit, on the default offer book. */
import { describe, expect, it } from 'vitest';
import {
  DEFAULT_VASTAI_EMULATOR_ASKS,
  type VastaiAskSpec,
  vastaiLocation,
  vastaiOffer,
} from './vastai-emulator-data.js';
import { VastaiOfferBook } from './vastai-offer-book.js';
import { DEFAULT_VASTAI_SEARCH_LIMIT, VastaiQueryError } from './vastai-search-query.js';

const ids = (offers: readonly { id: number }[]) => offers.map((offer) => offer.id);
const everyAsk = DEFAULT_VASTAI_EMULATOR_ASKS.map((ask) => ask.id);
const H100_ASK_SPEC = DEFAULT_VASTAI_EMULATOR_ASKS[0] as VastaiAskSpec;

describe('Vast.ai search query', () => {
  it('applies each operator as Vast.ai does', () => {
    const book = new VastaiOfferBook();

    expect(ids(book.search({ num_gpus: { eq: 8 } }))).toEqual([21_000_102]);
    expect(ids(book.search({ num_gpus: { neq: 1 } }))).toEqual([21_000_102, 21_000_104]);
    expect(ids(book.search({ dph_base: { lt: 0.1 } }))).toEqual([21_000_109]);
    expect(ids(book.search({ dph_base: { lte: 0.18 } }))).toEqual([21_000_106, 21_000_109]);
    expect(ids(book.search({ num_gpus: { gt: 1 } }))).toEqual([21_000_102, 21_000_104]);
    expect(ids(book.search({ gpu_name: { notin: ['RTX 4090', 'RTX 3090', 'RTX 3060'] } }))).toEqual([
      21_000_101, 21_000_102, 21_000_105, 21_000_110, 21_000_111,
    ]);
    expect(ids(book.search({ verified: { eq: false } }))).toEqual([21_000_107]);
  });

  it('a host without cpu_cores fails every comparison on it but is listed otherwise', () => {
    const book = new VastaiOfferBook();

    expect(ids(book.search({ cpu_cores: { gte: 1 } }))).not.toContain(21_000_111);
    expect(ids(book.search({}))).toContain(21_000_111);
    expect(book.find(21_000_111)?.cpu_cores).toBeNull();
  });

  it('orders by several keys and cuts at the limit (64 by default)', () => {
    const book = new VastaiOfferBook();

    const ordered = book.search({
      order: [
        ['num_gpus', 'desc'],
        ['dph_base', 'asc'],
      ],
      limit: 3,
    });
    const many = new VastaiOfferBook(
      Array.from({ length: 70 }, (_, index) => ({ ...H100_ASK_SPEC, id: 1 + index })),
    );

    expect(ids(ordered)).toEqual([21_000_102, 21_000_104, 21_000_109]);
    expect(ids(book.search({}))).toEqual(everyAsk);
    expect(many.search({})).toHaveLength(DEFAULT_VASTAI_SEARCH_LIMIT);
  });

  it('marks bid searches and takes interruptible as bid', () => {
    const book = new VastaiOfferBook();

    expect(book.search({ type: 'interruptible' }).every((offer) => offer.is_bid)).toBe(true);
    expect(book.search({ type: 'on-demand' }).some((offer) => offer.is_bid)).toBe(false);
  });

  it('refuses malformed queries naming the part', () => {
    const book = new VastaiOfferBook();
    const refusal = (body: unknown) => {
      try {
        book.search(body);
      } catch (error) {
        expect(error).toBeInstanceOf(VastaiQueryError);
        return (error as Error).message;
      }
      throw new Error('accepted');
    };

    expect(refusal([])).toContain('JSON object');
    expect(refusal({ num_gpus: 1 })).toContain('num_gpus');
    expect(refusal({ gpu_name: { in: 'RTX 4090' } })).toContain('gpu_name.in');
    expect(refusal({ order: [['price', 'asc']] })).toContain('order[0]');
    expect(refusal({ type: 'spot' })).toContain('type');
    expect(refusal({ limit: 0 })).toContain('limit');
  });

  it('the book: a taken ask is gone until released; dph_total includes the whole disk', () => {
    const book = new VastaiOfferBook();
    const offer = vastaiOffer(H100_ASK_SPEC);

    expect(book.take(offer.id)?.id).toBe(offer.id);
    expect(book.take(offer.id)).toBeUndefined();
    expect(ids(book.search({}))).not.toContain(offer.id);
    book.release(offer.id);
    expect(ids(book.search({}))).toContain(offer.id);
    expect(offer.dph_total).toBeCloseTo(offer.dph_base + (offer.disk_space * offer.storage_cost) / 720, 6);
    expect(() => book.add(H100_ASK_SPEC)).toThrow(/already in the offer book/);
  });

  it('names locations as gpuhunt does', () => {
    expect(vastaiLocation('Hong Kong, HK')).toBe('hk-hongkong');
    expect(vastaiLocation('Czechia, CZ')).toBe('cz-czechia');
    expect(vastaiLocation('SE')).toBe('se');
  });
});
