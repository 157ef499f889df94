"""The results store: SQLite with recorded, ordered schema migrations."""

from storbench.store.db import Store, open_store

__all__ = ["Store", "open_store"]
