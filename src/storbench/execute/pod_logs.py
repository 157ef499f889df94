"""A pod's log followed while it runs (shell): what a pod printed survives its deletion."""

from __future__ import annotations

import contextlib
import threading

from storbench.beside import Beside

FOLLOW_END_S = 5.0  # how long a finished pod's log follower gets to hand over what it read


class LogFollower(Beside):
    """A pod's log followed on a thread of its own from its container's start to its end: a pod deleted mid-run
    (its object gone moments after its container ends) still gives all it printed."""

    def __init__(self, core: object, name: str, namespace: str, end_marker: bytes = b"") -> None:
        super().__init__()
        self.core, self.name, self.namespace = core, name, namespace
        self.end_marker = end_marker  # the line its script prints last
        self.said_end = threading.Event()  # it printed ``end_marker``: done, whatever the API says of it
        self.thread_name = f"storbench-log-{name}"
        self._best = b""  # the longest stream read to its end (or cut off)
        self._current = bytearray()  # the stream being read, as far as it came: a stream left hanging (its node
        self._lock = threading.Lock()  # gone without closing it) still hands over what it passed on
        self.ended = threading.Event()  # the container's log came to its end (or the follower gave up)
        self.start_beside()

    def work(self) -> None:
        try:
            while not self.stopping.is_set():
                try:
                    response = self.core.read_namespaced_pod_log(  # type: ignore[attr-defined]
                        self.name, self.namespace, follow=True, _preload_content=False)
                except Exception:  # 400 while the container waits to start; 404 before it is seen or once gone
                    self.stopping.wait(0.2)
                    continue
                if isinstance(response, str):  # a client that hands the whole log back at once
                    with self._lock:
                        self._best = response.encode()
                    return
                with contextlib.suppress(Exception):  # a stream cut short keeps what came
                    for chunk in response.stream(None):
                        with self._lock:
                            self._current += chunk
                            tail = self._current[-(len(chunk) + len(self.end_marker)):]
                        if self.end_marker and self.end_marker in tail:
                            self.said_end.set()
                with contextlib.suppress(Exception):
                    response.release_conn()
                with self._lock:  # each stream starts at the top: the longest is the most
                    if len(self._current) >= len(self._best):
                        self._best = bytes(self._current)
                    self._current = bytearray()
                if not self._running():
                    return
                self.stopping.wait(0.2)  # the stream ended before the container did: follow it again
        finally:
            self.ended.set()

    @property
    def text(self) -> str:
        """What the pod printed, as far as it has been read."""
        with self._lock:
            longest = self._current if len(self._current) > len(self._best) else self._best
            return bytes(longest).decode(errors="replace")

    def _running(self) -> bool:
        """Can the pod's container still print (so a stream that ended was early: the container not yet started,
        or the stream cut short)? No once the pod is gone or every container of it has terminated."""
        try:
            pod = self.core.read_namespaced_pod(self.name, self.namespace)  # type: ignore[attr-defined]
        except Exception:  # gone
            return False
        statuses = getattr(pod.status, "container_statuses", None) or []
        return not statuses or any(getattr(status.state, "terminated", None) is None for status in statuses)

    def stop(self) -> None:
        self.stopping.set()  # not waited for: a stream still open ends with its pod
