/**
 * Every number column is an integer column (times are integer milliseconds, see schema.ts) but
 * the few listed in `FRACTIONAL_COLUMNS`. Arithmetic on times (a quarter of a job's age, a
 * backoff) easily yields a fraction, which Postgres refuses for a BIGINT column (`invalid input
 * syntax for type bigint: "1795533110032.75"`, failing the whole write) and SQLite silently
 * stores as a REAL. This plugin rounds every fractional number a query writes to any other
 * column, on both dialects, so that no write anywhere can carry one.
 */

import type { ColumnUpdateNode, InsertQueryNode } from 'kysely';
import {
  type ColumnNode,
  type KyselyPlugin,
  type OperationNode,
  OperationNodeTransformer,
  type PluginTransformQueryArgs,
  type PluginTransformResultArgs,
  PrimitiveValueListNode,
  type QueryResult,
  type RootOperationNode,
  type UnknownRow,
  ValueListNode,
  type ValueNode,
  ValuesNode,
} from 'kysely';

/** The columns that hold fractional numbers (REAL / DOUBLE PRECISION); a test checks the schema against it. */
export const FRACTIONAL_COLUMNS: ReadonlySet<string> = new Set(['price']);

function roundNumber(value: unknown): unknown {
  return typeof value === 'number' && Number.isFinite(value) && !Number.isInteger(value)
    ? Math.round(value)
    : value;
}

/** Rounds the numbers bound anywhere in an expression (a value, or raw SQL such as `CAST(? AS BIGINT)`). */
class RoundBoundNumbers extends OperationNodeTransformer {
  protected override transformValue(node: ValueNode): ValueNode {
    const rounded = roundNumber(node.value);
    return rounded === node.value ? node : { ...node, value: rounded };
  }

  protected override transformPrimitiveValueList(node: PrimitiveValueListNode): PrimitiveValueListNode {
    return PrimitiveValueListNode.create(node.values.map(roundNumber));
  }
}

const roundBoundNumbers = new RoundBoundNumbers();

function isIntegerColumn(column: OperationNode): boolean {
  const name = (column as ColumnNode).column?.name;
  return name === undefined || !FRACTIONAL_COLUMNS.has(name);
}

class WholeNumberWrites extends OperationNodeTransformer {
  /** `SET column = …` of updates and of `ON CONFLICT DO UPDATE`. */
  protected override transformColumnUpdate(node: ColumnUpdateNode): ColumnUpdateNode {
    const transformed = super.transformColumnUpdate(node);
    if (!isIntegerColumn(transformed.column)) return transformed;
    return { ...transformed, value: roundBoundNumbers.transformNode(transformed.value) };
  }

  /** `INSERT (columns) VALUES (…), (…)`: the values in the position of an integer column. */
  protected override transformInsertQuery(node: InsertQueryNode): InsertQueryNode {
    const transformed = super.transformInsertQuery(node);
    const { columns, values } = transformed;
    if (!columns || !values || !ValuesNode.is(values)) return transformed;
    const rounds = columns.map(isIntegerColumn);
    const rows = values.values.map((row) =>
      PrimitiveValueListNode.is(row)
        ? PrimitiveValueListNode.create(
            row.values.map((value, index) => (rounds[index] ? roundNumber(value) : value)),
          )
        : ValueListNode.create(
            row.values.map((value, index) =>
              rounds[index] ? roundBoundNumbers.transformNode(value) : value,
            ),
          ),
    );
    return { ...transformed, values: ValuesNode.create(rows) };
  }
}

/**
 * Whether a fractional number is bound anywhere in the query. A read-only walk: most queries have
 * none, and Kysely's transformer rebuilds (and freezes) every node of a query it passes, which
 * cost the pipelines a tenth of their CPU when every query went through it.
 */
function bindsFraction(value: unknown): boolean {
  if (typeof value === 'number') return Number.isFinite(value) && !Number.isInteger(value);
  if (typeof value !== 'object' || value === null) return false;
  if (Array.isArray(value)) return value.some(bindsFraction);
  for (const key in value) {
    if (bindsFraction((value as Record<string, unknown>)[key])) return true;
  }
  return false;
}

/** The Kysely plugin both dialects are opened with (database.ts). */
export class WholeNumbersPlugin implements KyselyPlugin {
  readonly #transformer = new WholeNumberWrites();

  transformQuery(args: PluginTransformQueryArgs): RootOperationNode {
    // Only writes store numbers; a query binding no fraction has nothing to round.
    const { node } = args;
    if (node.kind !== 'InsertQueryNode' && node.kind !== 'UpdateQueryNode') return node;
    return bindsFraction(node) ? this.#transformer.transformNode(node) : node;
  }

  async transformResult(args: PluginTransformResultArgs): Promise<QueryResult<UnknownRow>> {
    return args.result;
  }
}
