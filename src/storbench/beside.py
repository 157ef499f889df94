"""Work on a thread of its own beside a repetition (shell): the fault driver, the checking writer, a lab's watch of
its own state. ``start_beside()`` starts ``work()``, which returns once ``stopping`` is set; ``stop_beside()``
sets it and waits for the thread."""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import TypeVar

T = TypeVar("T")


class Beside:
    thread_name = "storbench-beside"

    def __init__(self) -> None:
        self.stopping = threading.Event()
        self._thread: threading.Thread | None = None

    def work(self) -> None:
        raise NotImplementedError

    def start_beside(self) -> None:
        self._thread = threading.Thread(target=self.work, name=self.thread_name, daemon=True)
        self._thread.start()

    @property
    def started(self) -> bool:
        return self._thread is not None

    def stop_beside(self, wait_s: float | None = None) -> bool:
        """Stop the work and wait for it (at most ``wait_s``); whether it has ended (work stuck in a call that
        does not return — a write to storage that stopped taking writes — is left behind on its daemon thread)."""
        self.stopping.set()
        if self._thread is None:
            return True
        self._thread.join(wait_s)
        return not self._thread.is_alive()


def bounded(work: Callable[[], T], wait_s: float) -> tuple[bool, T | None]:
    """``work()`` on a daemon thread of its own, waited for at most ``wait_s``: (whether it returned, what it
    returned). An exception it raises is raised here."""
    found: list[T] = []
    failed: list[BaseException] = []

    def run() -> None:
        try:
            found.append(work())
        except BaseException as exc:  # handed to the caller
            failed.append(exc)

    thread = threading.Thread(target=run, name="storbench-bounded", daemon=True)
    thread.start()
    thread.join(wait_s)
    if failed:
        raise failed[0]
    return (True, found[0]) if found else (False, None)
