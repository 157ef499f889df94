"""What a fault did to the I/O (pure): each client's per-window IOPS and longest-latency logs (`fio.logs`), merged
on the wall clock, read against the moment of the fault.

- **blackout**: the longest time in which no I/O completed, among the stretches that end after the fault and
  begin before its undoing (fio writes no row for a window without a completion: a row closing at t covers
  (t - window, t], so between rows at t1 and t2 nothing completed for t2 - t1 - window); for all clients together
  and for each client; **blackout at the undoing**: the same among the stretches that begin after it (an OSD
  started again makes its placement groups peer: I/O to them waits once more);
- **a stall beyond chance**: a client doing 20 I/Os a second has no completion in one 100 ms window in seven, and
  runs of three such windows in a minute by chance: a stall is the fault's only when a run of empty windows that
  long would arise by chance in fewer than STALL_ALPHA of runs, empty windows independent at the share seen before
  the fault (its gaps; (k + 1/2) / (n + 1), so that a series with none before still allows for some; never with
  fewer than two seconds of windows before the fault). The stall after the undoing is judged the same way.
  Figures keep the longest stall; the stall's count, the first completion, the verdict and where the level after
  the fault is read from take a stall within chance as none;
- **first completion**: from the fault to the end of that stall (0 when I/O never stopped for a whole window, or
  no longer than chance allows; None when nothing completed after it to the end of the run: the blackout is then a
  lower bound, and the run is not recovered, its level at the end 0);
- **dip**: the lowest window's IOPS after the fault, as % of the level before it; **dip before the fault**: the
  lowest of as many windows just before the fault (all of them, when fewer), as % of the same level: how low the
  windows go with no fault at all (the lowest of fifty noisy windows is far below their mean: a fault that did
  nothing still "dips"), so a dip is evidence of the fault only well below it;
- **recovered** is one test per repetition, on the last third of the run after the stall and after the last fault
  action in it (an undoing: blocks from both sides of it are of two levels) (at least HOLD_BLOCKS one-second
  blocks), fixed before looking: the 90 % interval of
  their mean's ratio to the level before the fault (Welch on the blocks' means, log scale, as `stats.trend`
  judges "flat") starting at or above 1 - RECOVERY_MARGIN (a one-sided 5 % test that it is not more than 10 %
  down; a level above the one before is recovered too: a restarted server may serve faster); "not recovered"
  when it is wholly below no change (one-sided 5 %); "undecided" otherwise; "too short to tell" without enough
  seconds. Scanning the run for the first stretch that passes would be a test at every window, and would call a
  run that stays 10 % down recovered three times in four;
- **recovery time** (of a recovered run only, an estimate, not a test): the first moment after the stall from
  which HOLD_BLOCKS blocks in a row are each at least 1 - RECOVERY_MARGIN of the level;
- **degraded level** (of a recovered run only): IOPS from the end of the stall to the recovery, as % of the level
  before;
- **level at the end**: the mean of the blocks the recovery test reads, as % of the level before (every run that
  could be tested: what a run that did not recover was left at);
- **longest I/O**: the longest completion latency logged in the measured section.

One-second blocks, not the windows, are the samples: windows of 100 ms next to each other are correlated. The
rule's error rates on simulated runs are in docs/methodology.md (`bench/failover_rule.py`).
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from enum import StrEnum

from storbench.fio.logs import LogRow
from storbench.stats.estimate import estimate, ratio_interval

BLOCK_MS = 1000  # the sample unit of a level: one second of windows
HOLD_BLOCKS = 5  # recovered: this many blocks in a row shown equal to the level before the fault
LEVEL_BLOCKS = 2  # the level before the fault: at least this many blocks (seconds)
RECOVERY_MARGIN = 0.10  # "back": the ratio's 90 % interval at or above -10 %
RECOVERY_CONFIDENCE = 0.90  # two one-sided 5 % tests, as "flat" along a curve
FINAL_SHARE = 1 / 3  # the test reads the last third of the run after the stall (at least HOLD_BLOCKS seconds)
STALL_ALPHA = 0.01  # a stall is the fault's when one as long would arise by chance in fewer than this share of runs
CHANCE_FROM_MS = 2 * BLOCK_MS  # no stall is called within chance on fewer than this many ms of windows before it


@dataclass(frozen=True)
class ClientLog:
    """One client's logs over a repetition: the IOPS log's rows and the longest-latency log's rows."""

    client: str
    iops: tuple[LogRow, ...]
    max_lat: tuple[LogRow, ...] = ()


@dataclass(frozen=True)
class Stall:
    start_ms: int  # the last completion before it (epoch ms)
    end_ms: int  # the first completion after it, or the end of the run (``open``)
    open: bool = False  # nothing completed after it: it lasted to the end of the run (its length a lower bound)

    @property
    def seconds(self) -> float:
        return (self.end_ms - self.start_ms) / 1000


@dataclass(frozen=True)
class Failover:
    """What one repetition's fault did. Times in seconds from the fault, levels in % of the level before it."""

    pre_fault_iops: float | None  # mean IOPS before the fault (None: less than two seconds before it)
    blackout_s: float  # all clients together (0: I/O never stopped for a whole window)
    client_blackouts_s: tuple[tuple[str, float], ...]
    first_completion_s: float | None  # None: no I/O completed after the fault to the end of the run
    dip_pct: float | None
    degraded_pct: float | None  # to the recovery; None unless recovered after a degraded stretch
    recovery: Recovery
    recovery_s: float | None  # when a recovered run got back; None unless recovered
    longest_io_ns: int | None
    restore_blackout_s: float | None = None  # None: nothing undone during the measured section
    restore_open: bool = False  # the stall after the undoing lasted to the end of the run: its blackout a lower bound
    end_pct: float | None = None  # the blocks the recovery test read, % of the level before; None: too short to tell
    dip_before_pct: float | None = None  # the lowest of as many windows before the fault, % of the level before
    # the blackout no longer than the gaps before the fault make likely by chance (all clients together; and the
    # clients whose own is): no stall of the fault's
    by_chance: bool = False
    clients_by_chance: tuple[str, ...] = ()
    restore_by_chance: bool = False  # the stall after the undoing, likewise (no stall of the undoing's)
    gap_before_s: float = 0.0  # the longest stretch without a completion before the fault, all clients together

    @property
    def stalled(self) -> bool:
        """I/O of all clients together stopped for a whole window or more, beyond what chance allows."""
        return self.blackout_s > 0 and not self.by_chance

    def client_stalled(self, client: str) -> bool:
        return dict(self.client_blackouts_s).get(client, 0.0) > 0 and client not in self.clients_by_chance

    @property
    def client_blackout_s(self) -> float:
        """The longest any one client waited (its own blackout): the answer where the others went on (a node
        failure takes one client's pod); the blackout of all clients together with one client."""
        return max((seconds for _, seconds in self.client_blackouts_s), default=self.blackout_s)


def completion_times(rows: Sequence[LogRow]) -> list[int]:
    """The times of the windows in which something completed, sorted, each once (directions together)."""
    return sorted({row.t_ms for row in rows if row.value > 0})


def stalls(times: Sequence[int], window_ms: int, from_ms: int, after_ms: int, until_ms: int, *,
           begins_before_ms: int | None = None, begins_from_ms: int | None = None) -> list[Stall]:
    """Every stretch without a completion for a whole window or more, measured from ``from_ms``, that ends after
    ``after_ms`` (a run that never completes again ends its stall at ``until_ms``), and begins before
    ``begins_before_ms`` and at or after ``begins_from_ms`` when given; in time order."""
    found = []
    closing = until_ms + window_ms
    ends = [from_ms, *(t for t in times if t < closing), closing]  # one still open at the end is closed there
    for previous, current in itertools.pairwise(ends):
        end = min(current - window_ms, until_ms)  # the first completion after the gap, at the earliest
        if end <= after_ms or end - previous < window_ms:
            continue
        if (begins_before_ms is not None and previous >= begins_before_ms) or (
                begins_from_ms is not None and previous < begins_from_ms):
            continue
        found.append(Stall(previous, end, open=current == closing))
    return found


def longest_stall(times: Sequence[int], window_ms: int, from_ms: int, after_ms: int, until_ms: int, *,
                  begins_before_ms: int | None = None, begins_from_ms: int | None = None) -> Stall | None:
    """The longest of `stalls` (the first of equals); None when nothing stopped for a whole window."""
    best: Stall | None = None
    for stall in stalls(times, window_ms, from_ms, after_ms, until_ms, begins_before_ms=begins_before_ms,
                        begins_from_ms=begins_from_ms):
        if best is None or stall.end_ms - stall.start_ms > best.end_ms - best.start_ms:
            best = stall
    return best


def empty_share(times: Sequence[int], window_ms: int, start_ms: int, end_ms: int) -> tuple[float, float]:
    """(windows without a completion, windows) from ``start_ms`` to ``end_ms`` of a series of completion times
    (rows closing at t cover (t - window, t]; the windows of several clients' rows are counted by the time between
    completions)."""
    windows = max(0.0, (end_ms - start_ms) / window_ms)
    inside = [t for t in times if start_ms < t <= end_ms]
    edges = [start_ms, *inside, end_ms + window_ms]  # as if completions closed a window at start_ms and after end_ms
    empty = sum(max(0, later - earlier - window_ms) for earlier, later in itertools.pairwise(edges)) / window_ms
    return min(empty, windows), windows


def stall_chance(stall: Stall, window_ms: int, empty: float, windows_before: float, windows_after: float) -> float:
    """How likely a run of empty windows at least as long as ``stall`` is somewhere among ``windows_after`` windows
    by chance, windows empty independently at the share seen before the fault (``empty`` of ``windows_before``,
    as (k + 1/2) / (n + 1))."""
    share = (empty + 0.5) / (windows_before + 1)
    run = (stall.end_ms - stall.start_ms) / window_ms
    return 1 - math.exp(-max(windows_after, 1.0) * (1 - share) * share ** run)


def merged_iops(logs: Sequence[ClientLog], window_ms: int, from_ms: int, to_ms: int) -> list[float]:
    """IOPS of all clients per window of ``window_ms`` from ``from_ms`` (wall clock); a window without rows is 0. A
    row closing at t covers (t - window, t] and is shared among the windows it overlaps, by how much: clients (and
    jobs) whose logs run out of step by part of a window add up evenly, where placing each row whole in one window
    put two rows of a client half a window off in one window and none in the next (a dip to half the level where
    nothing happened). The windows end where the last whole one does (to within a tenth of a window: a log's rows
    come a millisecond early or late), so that no client's share of the last one is missing."""
    count = max(0, (to_ms - from_ms + window_ms // 10) // window_ms)
    out = [0.0] * count
    for log in logs:
        for row in log.iops:
            start = row.t_ms - window_ms - from_ms  # the row's window, from ``from_ms``
            first = start // window_ms
            for index in (first, first + 1):
                if 0 <= index < count:
                    low, high = max(start, index * window_ms), min(start + window_ms, (index + 1) * window_ms)
                    if high > low:
                        out[index] += row.value * (high - low) / window_ms
    return out


def _blocks(values: Sequence[float], per_block: int) -> list[float]:
    return [sum(values[i:i + per_block]) / per_block for i in range(0, len(values) - per_block + 1, per_block)]


class Recovery(StrEnum):
    RECOVERED = "recovered"  # the end of the run shown at most the margin below the level before the fault
    NOT_RECOVERED = "not recovered"  # shown below it (one-sided 5 %)
    UNDECIDED = "undecided"  # neither: noisier than the margin lets the blocks show
    # fewer than HOLD_BLOCKS seconds after the stall and the last fault action, or no level before the fault
    UNTOLD = "too short to tell"


def judge_recovery(before: Sequence[float], final: Sequence[float]) -> Recovery:
    """The one test of a repetition: the blocks at the end of the run against the blocks before the fault, the 90 %
    interval of their means' ratio: its lower end at or above 1 - RECOVERY_MARGIN (one-sided 5 %) is recovered,
    wholly below no change is not recovered, anything else undecided."""
    level, held = estimate(before), estimate(final)
    if level is None or held is None or level.n < 2 or held.n < 2 or level.mean <= 0:
        return Recovery.UNTOLD
    if held.mean <= 0:
        return Recovery.NOT_RECOVERED
    low, high = ratio_interval(level, held, RECOVERY_CONFIDENCE)
    if low >= 1 - RECOVERY_MARGIN:
        return Recovery.RECOVERED
    return Recovery.NOT_RECOVERED if high < 1 else Recovery.UNDECIDED


def recovery_index(windows: Sequence[float], start: int, per_block: int, level: float) -> int | None:
    """When a recovered run got back (an estimate, not a test): the first window at or after ``start`` from which
    HOLD_BLOCKS one-second blocks in a row are each at least 1 - RECOVERY_MARGIN of ``level``; None if none."""
    span = HOLD_BLOCKS * per_block
    for index in range(start, len(windows) - span + 1):
        if all(block / level >= 1 - RECOVERY_MARGIN for block in _blocks(windows[index:index + span], per_block)):
            return index
    return None


def failover(logs: Sequence[ClientLog], window_ms: int, fault_ms: int, from_ms: int, to_ms: int,
             restore_ms: int | None = None, client_ends_ms: Mapping[str, int] | None = None,
             next_fault_ms: int | None = None, actions_ms: Sequence[int] = ()) -> Failover:
    """The failover figures of one repetition whose fault happened at ``fault_ms`` (and was undone at
    ``restore_ms``, when it was within the run), measured from ``from_ms`` to ``to_ms`` (all epoch ms, the clients'
    clocks taken as one). ``client_ends_ms``: where each client's own measured section ends (its last row, when its
    I/O did not stop for good; default ``to_ms``): a client whose log ends a little before another's has no stall
    at the end. The level, dip and recovery read the windows all clients were measuring in (from the last one's
    start to the first one's end), so that the start and end of a run are no drop. The recovery is judged after the
    later of the two stalls. ``next_fault_ms``: when the repetition's next fault was done; a stall that begins from
    then is that fault's, not this one's (nor its undoing's, when the undoing came later still: then none is read).
    The first completion after the fault ends the first stall beyond chance, which need not be the longest.
    ``actions_ms``: when the repetition's other fault actions were done (faults and undoings; the undoing at
    ``restore_ms`` and the next fault count anyway): the recovery test reads no block from before the last of them
    in the run."""
    ends = {log.client: min(to_ms, (client_ends_ms or {}).get(log.client, to_ms)) for log in logs}
    everyone = sorted({t for log in logs for t in completion_times(log.iops) if from_ms < t <= to_ms})
    undone = restore_ms if restore_ms is not None and restore_ms < to_ms else None
    if undone is not None and next_fault_ms is not None and undone >= next_fault_ms:
        undone = None  # undone after the next fault: what follows the undoing cannot be told apart from that one
    bound = min((t for t in (undone, next_fault_ms) if t is not None), default=None)
    ours = stalls(everyone, window_ms, from_ms, fault_ms, to_ms, begins_before_ms=bound)
    stall = max(ours, key=lambda s: s.end_ms - s.start_ms, default=None)
    again = (longest_stall(everyone, window_ms, from_ms, undone, to_ms, begins_from_ms=undone,
                           begins_before_ms=next_fault_ms) if undone is not None else None)
    starts = [log.iops[0].t_ms - window_ms for log in logs if log.iops]

    def by_chance(found: Stall | None, times: Sequence[int], start_ms: int, end_ms: int, after_ms: int = fault_ms
                  ) -> bool:
        """``found`` (a stall after ``after_ms``: the fault, or its undoing) no longer than the series' own empty
        windows before the fault make likely; never on fewer than CHANCE_FROM_MS of them (no share to tell from)."""
        if found is None or found.open or fault_ms - start_ms < CHANCE_FROM_MS:
            return False
        # the windows closed before the fault: from its last row on, whole windows only (the part of a window the
        # fault cut had counted as empty, 0 to 0.99 of one by where in it the fault fell, and turned one stall's
        # verdict with the fault's phase)
        last = max((t for t in times if start_ms < t <= fault_ms), default=start_ms)
        empty, before = empty_share(times, window_ms, start_ms, last + (fault_ms - last) // window_ms * window_ms)
        return stall_chance(found, window_ms, empty, before, (end_ms - after_ms) / window_ms) >= STALL_ALPHA

    per_client, clients_by_chance = [], []
    for log in logs:
        end = ends[log.client]
        mine = [t for t in completion_times(log.iops) if from_ms < t <= end]
        own = longest_stall(mine, window_ms, from_ms, fault_ms, end, begins_before_ms=bound)
        per_client.append((log.client, own.seconds if own else 0.0))
        if by_chance(own, mine, max(from_ms, log.iops[0].t_ms - window_ms) if log.iops else from_ms, end):
            clients_by_chance.append(log.client)
    first_start = max(from_ms, min(starts)) if starts else from_ms
    chance = by_chance(stall, everyone, first_start, to_ms)
    again_chance = undone is not None and by_chance(again, everyone, first_start, to_ms, undone)
    gap_before = longest_stall(everyone, window_ms, first_start, first_start, fault_ms, begins_before_ms=fault_ms)
    common_from = max(starts) if starts and from_ms <= max(starts) < fault_ms else from_ms
    common_to = min(ends.values(), default=to_ms)
    windows = merged_iops(logs, window_ms, common_from, common_to)
    per_block = max(1, round(BLOCK_MS / window_ms))
    fault_index = max(0, min(len(windows), (fault_ms - common_from) // window_ms))
    before = _blocks(windows[:fault_index], per_block)
    level = sum(before) / len(before) if len(before) >= LEVEL_BLOCKS else None
    # the level after the fault is read from the end of its stall (one within chance is no stall of the fault's)
    last_end = max((s.end_ms for s in (None if chance else stall, None if again_chance else again) if s is not None),
                   default=None)
    after_stall = fault_index if last_end is None else max(fault_index, -(-(last_end - common_from) // window_ms))
    # the test reads what the I/O was left at after the last fault action in the run: blocks from before and after
    # an undoing are of two levels (one of two clients' links slowed until 7 s of a 10 s run, its I/O back at once,
    # read "not recovered, 81 %"); too few seconds after it is too short to tell. The fault itself is no such action:
    # from it, the test read as it always had
    last_action = max((t for t in (restore_ms, next_fault_ms, *actions_ms)
                       if t is not None and fault_ms < t < to_ms), default=None)
    test_from = after_stall if last_action is None else max(after_stall, -(-(last_action - common_from) // window_ms))
    after = _blocks(windows[test_from:], per_block)
    final = after[-max(HOLD_BLOCKS, math.floor(FINAL_SHARE * len(after))):]
    gone = any(s is not None and s.open for s in (stall, again))  # no I/O after it to the end
    if gone:
        state = Recovery.UNTOLD if level is None else Recovery.NOT_RECOVERED
    else:
        state = Recovery.UNTOLD if level is None or len(final) < HOLD_BLOCKS else judge_recovery(before, final)
    back = None
    if level is not None and state is Recovery.RECOVERED:
        found = recovery_index(windows, after_stall, per_block, level)
        back = found if found is not None else len(windows) - len(final) * per_block
    dip = dip_before = None
    if level and fault_index < len(windows):
        # the lowest window from the fault until the I/O is shown back, or at least through the blocks that showed it
        # back (a fault that never took the I/O below the margin: its lowest window there, not none)
        until = len(windows) if back is None else max(back, fault_index + HOLD_BLOCKS * per_block)
        dip = 100 * min(windows[fault_index:until]) / level
        # the same over as many windows where no fault acted (all of them, when fewer): the noise's own low
        quiet = windows[max(0, fault_index - (until - fault_index)):fault_index]
        dip_before = 100 * min(quiet) / level if quiet else None
    # one quantity: the level until it was shown back (a run not back has its level at the end), over a second at
    # least (the level before is of one-second blocks: a few noisy windows before the I/O is shown back are none)
    degraded = None
    if level and back is not None and back - after_stall >= per_block:
        degraded = 100 * sum(windows[after_stall:back]) / (back - after_stall) / level
    end_level = 0.0 if gone and level else (
        100 * sum(final) / len(final) / level if level and state is not Recovery.UNTOLD else None)
    lat = [row.value for log in logs for row in log.max_lat if from_ms < row.t_ms <= to_ms]
    # the first stall beyond chance (the longest is, when any is: chance only grows shorter ones' odds)
    first = None if chance else next((s for s in ours if not by_chance(s, everyone, first_start, to_ms)), None)
    return Failover(
        pre_fault_iops=level, blackout_s=stall.seconds if stall else 0.0, client_blackouts_s=tuple(per_client),
        first_completion_s=(None if first.open else max(0.0, (first.end_ms - fault_ms) / 1000)) if first else 0.0,
        dip_pct=dip, dip_before_pct=dip_before, by_chance=chance, restore_by_chance=again_chance,
        clients_by_chance=tuple(clients_by_chance), gap_before_s=gap_before.seconds if gap_before else 0.0,
        degraded_pct=degraded, recovery=state,
        # from the fault (back may be the window the fault fell in, which starts before it)
        recovery_s=max(0.0, (common_from + back * window_ms - fault_ms) / 1000) if back is not None else None,
        longest_io_ns=max(lat) if lat else None,
        restore_blackout_s=(again.seconds if again else 0.0) if undone is not None else None, end_pct=end_level,
        restore_open=again is not None and again.open)
