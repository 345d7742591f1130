import { readFile } from 'node:fs/promises';
import path from 'node:path';
import type { Command } from 'commander';
import { CliError, usageError } from '../cli-error.js';

/** Publishes `{provider}.csv` files in gpuhunt's v3 layout under `output`; prints one line per provider. */
export async function publishFiles(
  files: readonly string[],
  options: { output: string; version?: string },
): Promise<void> {
  for (const file of files) {
    const name = path.basename(file);
    if (!name.endsWith('.csv')) throw usageError(`${file}: expected a {provider}.csv file`);
    const provider = name.slice(0, -'.csv'.length);
    let csv: string;
    try {
      csv = await readFile(file, 'utf8');
    } catch (error) {
      throw new CliError(`cannot read ${file}: ${(error as Error).message}`, 1, { cause: error });
    }
    // The zip writer loads here, not for every command of dstack-catalog.
    const { publishCatalog } = await import('../../publish/publish-catalog.js');
    let published: Awaited<ReturnType<typeof publishCatalog>>;
    try {
      published = await publishCatalog({
        directory: options.output,
        provider,
        csv,
        ...(options.version !== undefined && { version: options.version }),
      });
    } catch (error) {
      throw usageError((error as Error).message);
    }
    process.stdout.write(`${provider} ${published.version} ${published.zipPath}\n`);
  }
}

export function registerPublishCommand(program: Command): void {
  program
    .command('publish')
    .description("write catalog CSVs in gpuhunt's v3 layout, for a team to serve its own catalog")
    .argument('<files...>', '{provider}.csv files, e.g. the output of `dstack-catalog collect`')
    .requiredOption(
      '-o, --output <dir>',
      'root of the layout (what GPUHUNT_CATALOG_URL points at once served)',
    )
    .option('--catalog-version <version>', 'version to publish as (default: YYYYMMDD-<hash of the CSV>)')
    .addHelpText(
      'after',
      '\nWrites {dir}/{provider}/{version}/catalog.zip (member {provider}.csv), the same under\n{dir}/{provider}/latest/, and then {dir}/{provider}/version. Example:\n  dstack-catalog collect aws --output aws.csv && dstack-catalog publish aws.csv --output ./catalog\n',
    )
    .action(async (files: string[], options: { output: string; catalogVersion?: string }) => {
      await publishFiles(files, {
        output: options.output,
        ...(options.catalogVersion !== undefined && { version: options.catalogVersion }),
      });
    });
}
