/**
 * A database's schema as plain data, to compare a database migrated by today's code with a frozen
 * description of one made by an earlier version (`__fixtures__/`). On SQLite it is the DDL text
 * SQLite keeps (ALTER TABLE rewrites it, so column order and types show); on Postgres the columns,
 * constraints and index definitions of the connection's schema, with the schema's name replaced.
 */
import { type Kysely, sql } from 'kysely';
import type { SqlDialect } from '../context.js';

export interface SchemaDescription {
  dialect: SqlDialect;
  /** The names in `kysely_migration`, in application order. */
  migrations: string[];
  objects: string[];
}

// biome-ignore lint/suspicious/noExplicitAny: describes whatever schema the database has.
export async function describeSchema(db: Kysely<any>, dialect: SqlDialect): Promise<SchemaDescription> {
  const migrations = (
    await sql<{ name: string }>`select name from kysely_migration order by timestamp, name`.execute(db)
  ).rows.map((row) => row.name);
  if (dialect === 'sqlite') {
    const rows = await sql<{ type: string; name: string; table: string; sql: string | null }>`
      select type, name, tbl_name as "table", sql from sqlite_master
      where name not like 'sqlite_%' order by type, name`.execute(db);
    return {
      dialect,
      migrations,
      objects: rows.rows.map((row) => `${row.type} ${row.table}.${row.name}: ${row.sql ?? ''}`),
    };
  }
  const schema = (await sql<{ schema: string }>`select current_schema() as schema`.execute(db)).rows[0]
    ?.schema;
  if (!schema) throw new Error('describeSchema: the connection has no current schema');
  const anonymous = (text: string | null) => (text ?? '').split(`${schema}.`).join('<schema>.');
  const columns = await sql<{
    table_name: string;
    column_name: string;
    ordinal_position: number;
    data_type: string;
    is_nullable: string;
    column_default: string | null;
  }>`
    select table_name, column_name, ordinal_position, data_type, is_nullable, column_default
    from information_schema.columns where table_schema = current_schema()
    order by table_name, ordinal_position`.execute(db);
  const constraints = await sql<{ table_name: string; name: string; definition: string }>`
    select rel.relname as table_name, con.conname as name, pg_get_constraintdef(con.oid) as definition
    from pg_constraint con join pg_class rel on rel.oid = con.conrelid
    join pg_namespace ns on ns.oid = rel.relnamespace
    where ns.nspname = current_schema() order by rel.relname, con.conname`.execute(db);
  const indexes = await sql<{ tablename: string; indexname: string; indexdef: string }>`
    select tablename, indexname, indexdef from pg_indexes where schemaname = current_schema()
    order by tablename, indexname`.execute(db);
  return {
    dialect,
    migrations,
    objects: [
      ...columns.rows.map(
        (c) =>
          `column ${c.table_name}.${c.column_name} #${c.ordinal_position}: ${c.data_type}` +
          `${c.is_nullable === 'NO' ? ' not null' : ''}${c.column_default ? ` default ${anonymous(c.column_default)}` : ''}`,
      ),
      ...constraints.rows.map((c) => `constraint ${c.table_name}.${c.name}: ${anonymous(c.definition)}`),
      ...indexes.rows.map((i) => `index ${i.tablename}.${i.indexname}: ${anonymous(i.indexdef)}`),
    ],
  };
}
