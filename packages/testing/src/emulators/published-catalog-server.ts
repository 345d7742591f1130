/**
 * A catalog in gpuhunt's v3 layout (`{provider}/version`, `{provider}/{version}/catalog.zip`)
 * served over HTTP on loopback, as gpuhunt's bucket serves its published catalogs: what an
 * emulator whose provider's prices are its own gives the server as `catalog.url`.
 */
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join, normalize } from 'node:path';
import { type CatalogItem, formatCatalogCsv, publishCatalog } from '@dstack/catalog';

export interface PublishedCatalogServer {
  /** `http://127.0.0.1:<port>`: the server's `catalog.url`. */
  readonly url: string;
  close(): Promise<void>;
}

/** Publishes `items` as `provider`'s catalog and serves it until `close`. */
export async function servePublishedCatalog(
  provider: string,
  items: readonly CatalogItem[],
): Promise<PublishedCatalogServer> {
  const directory = await mkdtemp(join(tmpdir(), 'dstack-published-catalog-'));
  await publishCatalog({ directory, provider, csv: formatCatalogCsv(items) });
  const server = createServer((request, response) => {
    const path = normalize(decodeURIComponent(new URL(request.url ?? '/', 'http://catalog').pathname));
    readFile(join(directory, path)).then(
      (body) => response.end(body),
      () => response.writeHead(404).end(),
    );
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    async close() {
      await new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      });
      await rm(directory, { recursive: true, force: true });
    },
  };
}
