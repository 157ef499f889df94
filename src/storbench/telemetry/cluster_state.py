"""A Ceph cluster's placement groups through a fault (pure; issue 32's "from the storage itself"): `ceph pg stat`'s
answer read into a sample, samples kept as a small CSV log with the repetition (beside fio's timeline logs), and
read back.

A sample: when (epoch ms), how many PGs are not active+clean, and the objects degraded (a copy missing) and
misplaced (on the wrong OSD) at that moment."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

LOG_NAME = "cluster_pgs.csv"  # its name among the repetition's logs
_HEADER = "t_ms,pgs,not_clean_pgs,degraded_objects,misplaced_objects"


@dataclass(frozen=True)
class ClusterSample:
    t_ms: int
    pgs: int
    not_clean_pgs: int
    degraded_objects: int
    misplaced_objects: int


def _count(value: object) -> int:
    return int(value) if isinstance(value, int | float) and not isinstance(value, bool) and value >= 0 else 0


def is_clean(state: object) -> bool:
    """Whether PGs in ``state`` (a `pg stat` state name, "active+clean+scrubbing") are active+clean: all their
    copies in place and served, whatever routine work they do beside (a scrub, a snapshot trim); not when a scrub
    found them inconsistent."""
    parts = set(state.split("+")) if isinstance(state, str) else set()
    return {"active", "clean"} <= parts and "inconsistent" not in parts


def pg_stat_sample(answer: object, t_ms: int) -> ClusterSample | None:
    """``pg stat``'s JSON (Ceph 16: ``{"pg_summary": {"num_pgs", "num_pg_by_state", "degraded_objects", ...}}``;
    older: the summary at the top) as a sample; None when it is not that."""
    if not isinstance(answer, dict):
        return None
    summary = answer.get("pg_summary", answer)
    if not isinstance(summary, dict) or "num_pgs" not in summary:
        return None
    by_state = summary.get("num_pg_by_state", [])
    clean = sum(_count(s.get("num")) for s in by_state if isinstance(s, dict) and is_clean(s.get("name"))) \
        if isinstance(by_state, list) else 0
    pgs = _count(summary.get("num_pgs"))
    return ClusterSample(t_ms, pgs, max(0, pgs - clean), _count(summary.get("degraded_objects")),
                         _count(summary.get("misplaced_objects")))


def render_log(samples: Sequence[ClusterSample]) -> str:
    return "\n".join([_HEADER, *(f"{s.t_ms},{s.pgs},{s.not_clean_pgs},{s.degraded_objects},{s.misplaced_objects}"
                                 for s in samples)]) + "\n"


def parse_log(text: str) -> list[ClusterSample]:
    """The samples of a log ``render_log`` wrote (rows that are not five whole numbers are skipped)."""
    samples = []
    for line in text.splitlines()[1:]:
        fields = line.split(",")
        if len(fields) == 5 and all(f.isdigit() for f in fields):
            samples.append(ClusterSample(*(int(f) for f in fields)))
    return samples


@dataclass(frozen=True)
class ClusterRecovery:
    """What the cluster did after a fault: when every PG was active+clean again (seconds after the fault; None when
    it never was while watched), whether any PG left active+clean at all, and the most degraded objects seen."""

    clean_after_s: float | None
    disturbed: bool
    degraded_objects_max: int
    watched_s: float


def cluster_recovery(samples: Sequence[ClusterSample], fault_ms: int) -> ClusterRecovery | None:
    """Read against the fault: the first sample after the PGs left active+clean at or after the fault in which all
    are active+clean again. None without samples after the fault."""
    after = [s for s in samples if s.t_ms >= fault_ms]
    if not after:
        return None
    disturbed_at = next((i for i, s in enumerate(after) if s.not_clean_pgs > 0), None)
    clean_at = None
    if disturbed_at is not None:
        clean_at = next((s.t_ms for s in after[disturbed_at:] if s.not_clean_pgs == 0 and s.pgs > 0), None)
    return ClusterRecovery(
        clean_after_s=(clean_at - fault_ms) / 1000 if clean_at is not None else None,
        disturbed=disturbed_at is not None,
        degraded_objects_max=max(s.degraded_objects for s in after),
        watched_s=(after[-1].t_ms - fault_ms) / 1000)
