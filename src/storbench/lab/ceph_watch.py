"""A lab cluster's placement groups watched through a repetition with faults (shell): `pg stat` once a second
through librados (`ceph_client`, no ceph process a sample), from before the fault until the lab has settled, kept
as the repetition's ``cluster_pgs.csv`` log (`telemetry.cluster_state`)."""

from __future__ import annotations

import time

from storbench.beside import Beside
from storbench.ceph_client import RadosClient
from storbench.telemetry.cluster_state import LOG_NAME, ClusterSample, pg_stat_sample, render_log

WAIT_S = 30.0  # a sample stuck longer (librados' own timeout is 10 s) is left behind


class PgWatch(Beside):
    """``with PgWatch(conf):`` around a repetition and its settling; ``log()`` afterwards. A cluster it cannot
    reach gives an empty log (the failover figures then have no cluster part), never a failed repetition."""

    thread_name = "storbench-pg-watch"

    def __init__(self, conf: str, interval_s: float = 1.0) -> None:
        super().__init__()
        self.conf, self.interval_s = conf, interval_s
        self.samples: list[ClusterSample] = []
        self._client: RadosClient | None = None

    def _take(self) -> None:
        assert self._client is not None
        try:
            found = pg_stat_sample(self._client.mon_command({"prefix": "pg stat"}), round(time.time() * 1000))
        except (OSError, ValueError):
            found = None
        if found is not None:
            self.samples.append(found)

    def work(self) -> None:
        while True:
            self._take()
            if self.stopping.wait(self.interval_s):
                return

    def __enter__(self) -> PgWatch:
        try:
            self._client = RadosClient(self.conf, op_timeout_s=10)
        except OSError:
            return self
        self.start_beside()
        return self

    def __exit__(self, *exc: object) -> None:
        if self.started and self.stop_beside(WAIT_S):
            self._take()  # the state the lab settled in (it may have settled since the last sample)
        if self._client is not None:
            self._client.close()
            self._client = None

    def log(self) -> tuple[str, str]:
        return LOG_NAME, render_log(self.samples)
