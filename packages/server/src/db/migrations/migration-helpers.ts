/**
 * What the migration modules share: the column types that differ between the dialects, and the
 * common step of adding columns to existing tables, so such a migration is a few lines.
 */
import type { ColumnDataType, Kysely, Migration } from 'kysely';
import type { SqlDialect } from '../../context.js';

// biome-ignore lint/suspicious/noExplicitAny: migrations run against the schema of their time, not today's.
export type AnyDatabase = Kysely<any>;

/** A migration module's default export: its migration, for a dialect. */
export type MigrationFactory = (dialect: SqlDialect) => Migration;

/** Column types that differ between the dialects; everything else is `text`/`integer`. */
export interface ColumnTypes {
  /** Milliseconds since the epoch: exceeds 32 bits, so BIGINT on Postgres. */
  time: ColumnDataType;
  real: ColumnDataType;
}

export function columnTypes(dialect: SqlDialect): ColumnTypes {
  return dialect === 'postgres'
    ? { time: 'bigint', real: 'double precision' }
    : { time: 'integer', real: 'real' };
}

/** The tables the pipelines claim rows of (with lock columns) since the first migration. */
export const PIPELINE_TABLES = ['runs', 'jobs', 'instances', 'fleets'] as const;

/** A column to add: `time` and `real` take the dialect's type (see `ColumnTypes`). */
export interface NewColumn {
  name: string;
  type: 'text' | 'integer' | 'time' | 'real';
  /** Makes the column NOT NULL; existing rows get the default, so one is required. */
  notNullDefault?: number | string;
}

/** Adds columns, table by table in the order given; the way down drops them in reverse. */
export function addColumnsSteps(dialect: SqlDialect, columnsByTable: Record<string, NewColumn[]>): Migration {
  const types = columnTypes(dialect);
  const resolve = (type: NewColumn['type']): ColumnDataType =>
    type === 'time' ? types.time : type === 'real' ? types.real : type;
  const entries = Object.entries(columnsByTable);
  return {
    async up(db: AnyDatabase) {
      for (const [table, columns] of entries) {
        for (const column of columns) {
          const notNullDefault = column.notNullDefault;
          await db.schema
            .alterTable(table)
            .addColumn(column.name, resolve(column.type), (c) =>
              notNullDefault === undefined ? c : c.notNull().defaultTo(notNullDefault),
            )
            .execute();
        }
      }
    },
    async down(db: AnyDatabase) {
      for (const [table, columns] of [...entries].reverse()) {
        for (const column of [...columns].reverse()) {
          await db.schema.alterTable(table).dropColumn(column.name).execute();
        }
      }
    },
  };
}

/** A migration that only adds columns (see `addColumnsSteps`). */
export function addColumns(columnsByTable: Record<string, NewColumn[]>): MigrationFactory {
  return (dialect) => addColumnsSteps(dialect, columnsByTable);
}
