"""The results store: SQLite with recorded, ordered schema migrations (`migrations`), or PostgreSQL with the same
schema (`postgres`, its SQL from `dialect`), opened by `db`, read and written through `queries.Store`, its rows
converted by `rows`."""

from storbench.store.db import Store, open_store, store_exists

__all__ = ["Store", "open_store", "store_exists"]
