import type { CatalogItem } from './catalog-item.js';

/**
 * One provider's offers in that provider's own order (usually by price). The columnar store
 * answers with row numbers, so an item is only built when somebody reads it.
 */
export interface OrderedOffers {
  readonly length: number;
  priceAt(index: number): number;
  itemAt(index: number): CatalogItem;
}

/** Offers already held as objects, e.g. from an online provider. */
export function orderedOffersOf(items: readonly CatalogItem[]): OrderedOffers {
  return {
    length: items.length,
    priceAt: (index) => items[index]!.price,
    itemAt: (index) => items[index]!,
  };
}

/**
 * The result of a catalog query: offers from several providers merged by price like
 * Python's `heapq.merge(key=price)` (the cheapest head wins, ties go to the earlier list,
 * each list keeps its own order, so the result is not necessarily sorted).
 *
 * Matching and ordering cost no allocation per offer; `CatalogItem` objects are built only
 * for the offers read, so asking for the 50 cheapest of 100,000 matches stays cheap.
 * Every read builds fresh objects that callers may change, except the empty `flags` and
 * `providerData` of the columnar store's rows: shared and frozen (copy them to change them).
 */
export class CatalogSelection implements Iterable<CatalogItem> {
  private readonly lists: readonly OrderedOffers[];
  /** Number of matching offers. */
  readonly length: number;

  constructor(lists: readonly OrderedOffers[]) {
    this.lists = lists.filter((list) => list.length > 0);
    this.length = this.lists.reduce((sum, list) => sum + list.length, 0);
  }

  /** The first `limit` offers in merged order. */
  take(limit: number): CatalogItem[] {
    if (!(limit > 0)) return [];
    const count = Math.min(Math.ceil(limit), this.length);
    const items = new Array<CatalogItem>(count);
    // A plain loop, not the generator: resuming a generator per offer doubled the cost of a
    // 100k-row query that returns most of its rows.
    if (this.lists.length === 1) {
      const only = this.lists[0]!;
      for (let index = 0; index < count; index++) items[index] = only.itemAt(index);
      return items;
    }
    const cursor = new MergeCursor(this.lists);
    for (let index = 0; index < count; index++) items[index] = cursor.next();
    return items;
  }

  /** Every offer, in merged order. */
  toArray(): CatalogItem[] {
    return this.take(this.length);
  }

  *[Symbol.iterator](): IterableIterator<CatalogItem> {
    const cursor = new MergeCursor(this.lists);
    for (let index = 0; index < this.length; index++) yield cursor.next();
  }
}

/**
 * Walks non-empty lists in merged order with a binary min-heap of list numbers, keyed by
 * (head price, list number). `next()` must be called at most the lists' total length times.
 */
class MergeCursor {
  private readonly positions: number[];
  private readonly heap: number[];

  constructor(private readonly lists: readonly OrderedOffers[]) {
    this.positions = new Array<number>(lists.length).fill(0);
    this.heap = lists.map((_, index) => index);
    for (let index = (this.heap.length >> 1) - 1; index >= 0; index--) this.siftDown(index);
  }

  next(): CatalogItem {
    const { heap, lists, positions } = this;
    const list = heap[0]!;
    const item = lists[list]!.itemAt(positions[list]!);
    positions[list] = positions[list]! + 1;
    if (positions[list] === lists[list]!.length) {
      heap[0] = heap[heap.length - 1]!;
      heap.pop();
    }
    if (heap.length > 1) this.siftDown(0);
    return item;
  }

  private head(list: number): number {
    return this.lists[list]!.priceAt(this.positions[list]!);
  }

  private less(left: number, right: number): boolean {
    const difference = this.head(left) - this.head(right);
    return difference < 0 || (difference === 0 && left < right);
  }

  private siftDown(start: number): void {
    const heap = this.heap;
    let index = start;
    for (;;) {
      const left = 2 * index + 1;
      const right = left + 1;
      let smallest = index;
      if (left < heap.length && this.less(heap[left]!, heap[smallest]!)) smallest = left;
      if (right < heap.length && this.less(heap[right]!, heap[smallest]!)) smallest = right;
      if (smallest === index) return;
      [heap[index], heap[smallest]] = [heap[smallest]!, heap[index]!];
      index = smallest;
    }
  }
}

/** Merges lists of offers by price, as {@link CatalogSelection} does. */
export function mergeByPrice(lists: readonly (readonly CatalogItem[])[]): CatalogItem[] {
  return new CatalogSelection(lists.map(orderedOffersOf)).toArray();
}
