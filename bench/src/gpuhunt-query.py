"""Times gpuhunt's own Catalog.query over the catalog files of a folder (the bench's reference).

Run with gpuhunt's source on PYTHONPATH: python3 gpuhunt-query.py DIR QUERIES_JSON RUNS WARMUPS.
DIR holds `<provider>.csv` files in gpuhunt's format; those of providers gpuhunt knows are
loaded. QUERIES_JSON is a list of [name, keyword arguments of Catalog.query]. Prints one JSON
object: {"rows": N, "queries": {name: {"ms": [durations], "results": count}}}.
"""

import io
import json
import os
import sys
import time

from gpuhunt import Catalog
from gpuhunt._internal import storage
from gpuhunt._internal.catalog import OFFLINE_PROVIDERS, ProviderCatalog


def main() -> None:
    directory, queries_json = sys.argv[1], sys.argv[2]
    runs, warmups = int(sys.argv[3]), int(sys.argv[4])
    # The catalog as gpuhunt holds it after Catalog.load(): items in memory, no reload on query.
    catalog = Catalog(auto_reload=False)
    providers = []
    for name in sorted(os.listdir(directory)):
        provider = name.removesuffix(".csv")
        if not name.endswith(".csv") or provider not in OFFLINE_PROVIDERS:
            continue
        with open(os.path.join(directory, name), "rb") as csv_file:
            items = list(storage.load(io.TextIOWrapper(csv_file, "utf-8"), provider=provider))
        catalog.catalog[provider] = ProviderCatalog(version="bench", items=items)
        providers.append(provider)
    catalog.loaded_at = time.monotonic()
    rows = sum(len(entry.items) for entry in catalog.catalog.values())
    answer = {"rows": rows, "queries": {}}
    for name, arguments in json.loads(queries_json):
        for _ in range(warmups):
            catalog.query(provider=providers, **arguments)
        durations = []
        for _ in range(runs):
            started = time.perf_counter()
            result = catalog.query(provider=providers, **arguments)
            durations.append((time.perf_counter() - started) * 1000)
        answer["queries"][name] = {"ms": durations, "results": len(result)}
    print(json.dumps(answer))


if __name__ == "__main__":
    main()
