"""A Kubernetes cluster's nodes read beside a repetition (shell): every kubelet's summary API through the API
server (`/api/v1/nodes/NAME/proxy/stats/summary?only_cpu_and_memory=true`, the `nodes/proxy` permission), every
``interval_s``, handed as text to the pure `telemetry.kubelet`. A node that does not answer (powered off by a fault)
is a problem said once, never a failed repetition."""

from __future__ import annotations

import time
from collections.abc import Sequence

from storbench.beside import Beside
from storbench.telemetry.kubelet import KubeletReading, capacity_cores, kubelet_series, parse_summary
from storbench.telemetry.series import TelemetrySeries

READ_TIMEOUT_S = 2.0
SILENT_BACKOFF_S = 10.0  # a node that did not answer is asked again this much later, so the others stay on time
SUMMARY_PATH = "/api/v1/nodes/{name}/proxy/stats/summary"  # the node's name: a path parameter the client quotes


def _reason(error: Exception) -> str:
    """A short reason: the kind of network error (a read timeout) rather than its long repr."""
    cause = getattr(error, "reason", None)
    return type(cause).__name__ if isinstance(cause, Exception) else type(error).__name__


class KubeletSampler(Beside):
    thread_name = "storbench-kubelets"

    def __init__(self, core: object, interval_s: float) -> None:
        super().__init__()
        self.core = core
        self.interval_s = interval_s
        self.nodes: dict[str, float] = {}  # name -> capacity in cores
        self.readings: list[KubeletReading] = []
        self.problems: dict[str, str] = {}  # node -> its first problem
        self.silent_until: dict[str, float] = {}  # node -> monotonic time it is asked again

    def _list_nodes(self) -> None:
        try:
            listed = self.core.list_node(_request_timeout=READ_TIMEOUT_S).items  # type: ignore[attr-defined]
        except Exception as error:  # the API's and the network's errors alike: said, not raised
            self.problems["nodes"] = f"kubelets: cannot list the nodes ({_reason(error)})"
            return
        self.nodes = {node.metadata.name: capacity_cores(str((node.status.capacity or {}).get("cpu", "0")))
                      for node in listed}

    def _read_once(self) -> None:
        for name, capacity in self.nodes.items():
            if time.monotonic() < self.silent_until.get(name, 0.0):
                continue
            try:
                api = self.core.api_client  # type: ignore[attr-defined]
                request = api.param_serialize(method="GET", resource_path=SUMMARY_PATH, path_params={"name": name},
                                              query_params=[("only_cpu_and_memory", "true")],
                                              auth_settings=["BearerToken"])
                answer = api.call_api(*request, _request_timeout=READ_TIMEOUT_S)
                if answer.status != 200:
                    self.problems.setdefault(name, f"kubelet of {name}: no summary (HTTP {answer.status})")
                    continue
                answer.read()
                self.readings.append(parse_summary(name, capacity, answer.data.decode(errors="replace")))
            except Exception as error:  # a node powered off, a kubelet restarting: said once per node
                self.problems.setdefault(name, f"kubelet of {name}: no answer ({_reason(error)})")
                self.silent_until[name] = time.monotonic() + SILENT_BACKOFF_S

    def work(self) -> None:
        while not self.stopping.is_set():
            self._read_once()
            self.stopping.wait(self.interval_s)

    def start(self) -> None:
        self._list_nodes()
        self._read_once()
        self.start_beside()

    def stop(self) -> tuple[Sequence[TelemetrySeries], Sequence[str]]:
        if self.started:
            self.stop_beside(wait_s=READ_TIMEOUT_S * (len(self.nodes) + 1))
            self._read_once()
        return kubelet_series(self.readings), tuple(self.problems.values())
