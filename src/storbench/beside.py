"""Work on a thread of its own beside a repetition (shell): the fault driver, the checking writer, a lab's watch of
its own state. ``start_beside()`` starts ``work()``, which returns once ``stopping`` is set; ``stop_beside()``
sets it and waits for the thread."""

from __future__ import annotations

import threading


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

    def stop_beside(self) -> bool:
        """Stop the work and wait for it; whether it had been started."""
        self.stopping.set()
        if self._thread is None:
            return False
        self._thread.join()
        return True
