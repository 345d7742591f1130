/**
 * Maps a field path (from validation) back to a position in the YAML text, so errors can say
 * `file:line:column`. Validation runs on normalised values (a GPU string becomes an object, an
 * env list becomes a mapping), so a path may go deeper than the document: the walk stops at the
 * deepest node that exists and reports the path up to it.
 */
import { type Document, isAlias, isMap, isScalar, isSeq, type LineCounter, type Node } from 'yaml';

export interface YamlLocation {
  /** 1-based line and column. */
  line: number;
  column: number;
  /** The part of the requested path that exists in the document (plus a missing last key). */
  path: Array<string | number>;
}

/**
 * Locates `path` in the document. With `pointAtKey`, the position is that of the last key
 * rather than its value (used for unknown fields).
 */
export function locateInDocument(
  document: Document,
  lineCounter: LineCounter,
  path: ReadonlyArray<string | number>,
  options: { pointAtKey?: boolean } = {},
): YamlLocation {
  const position = (offset: number | undefined) => {
    const { line, col } = lineCounter.linePos(offset ?? 0);
    return { line: Math.max(line, 1), column: Math.max(col, 1) };
  };
  const resolve = (node: unknown): Node | undefined => {
    if (isAlias(node)) return node.resolve(document) as Node | undefined;
    return (node ?? undefined) as Node | undefined;
  };
  let node = resolve(document.contents);
  let offset = node?.range?.[0];
  const walked: Array<string | number> = [];
  for (let index = 0; index < path.length; index++) {
    const segment = path[index]!;
    const isLast = index === path.length - 1;
    if (isMap(node)) {
      const pair = node.items.find(
        (item) => isScalar(item.key) && String(item.key.value) === String(segment),
      );
      if (!pair) {
        // A missing key (a required field) is still the user's word for what is wrong.
        walked.push(segment);
        break;
      }
      walked.push(segment);
      const key = pair.key as Node;
      const value = resolve(pair.value);
      if (
        (isLast && options.pointAtKey) ||
        !value?.range ||
        (isScalar(value) && value.value === null && !value.source)
      ) {
        offset = key.range?.[0];
        node = value;
        if (isLast || !value) break;
        continue;
      }
      node = value;
      offset = value.range[0];
    } else if (isSeq(node) && typeof segment === 'number') {
      const item = resolve(node.items[segment]);
      if (!item?.range) break;
      walked.push(segment);
      node = item;
      offset = item.range[0];
    } else {
      break;
    }
  }
  return { ...position(offset), path: walked };
}
