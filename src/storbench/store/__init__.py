"""The results store: SQLite with recorded, ordered schema migrations (`migrations`), opened by `db`, read and
written through `queries.Store`, its rows converted by `rows`."""

from storbench.store.db import Store, open_store

__all__ = ["Store", "open_store"]
