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
 * Every read builds fresh objects that callers may change.
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
    const items: CatalogItem[] = [];
    if (limit <= 0) return items;
    for (const item of this) {
      items.push(item);
      if (items.length >= limit) break;
    }
    return items;
  }

  /** Every offer, in merged order. */
  toArray(): CatalogItem[] {
    return this.take(this.length);
  }

  *[Symbol.iterator](): IterableIterator<CatalogItem> {
    const lists = this.lists;
    if (lists.length === 1) {
      const only = lists[0]!;
      for (let index = 0; index < only.length; index++) yield only.itemAt(index);
      return;
    }
    // Binary min-heap of list numbers, keyed by (head price, list number).
    const positions = new Array<number>(lists.length).fill(0);
    const heap = lists.map((_, index) => index);
    const head = (list: number): number => lists[list]!.priceAt(positions[list]!);
    const less = (left: number, right: number): boolean => {
      const difference = head(left) - head(right);
      return difference < 0 || (difference === 0 && left < right);
    };
    const siftDown = (start: number): void => {
      let index = start;
      for (;;) {
        const left = 2 * index + 1;
        const right = left + 1;
        let smallest = index;
        if (left < heap.length && less(heap[left]!, heap[smallest]!)) smallest = left;
        if (right < heap.length && less(heap[right]!, heap[smallest]!)) smallest = right;
        if (smallest === index) return;
        [heap[index], heap[smallest]] = [heap[smallest]!, heap[index]!];
        index = smallest;
      }
    };
    for (let index = (heap.length >> 1) - 1; index >= 0; index--) siftDown(index);
    while (heap.length > 0) {
      const list = heap[0]!;
      yield lists[list]!.itemAt(positions[list]!);
      positions[list] = positions[list]! + 1;
      if (positions[list] === lists[list]!.length) {
        heap[0] = heap[heap.length - 1]!;
        heap.pop();
      }
      if (heap.length > 0) siftDown(0);
    }
  }
}

/** Merges lists of offers by price, as {@link CatalogSelection} does. */
export function mergeByPrice(lists: readonly (readonly CatalogItem[])[]): CatalogItem[] {
  return new CatalogSelection(lists.map(orderedOffersOf)).toArray();
}
