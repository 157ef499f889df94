"""The volume lab's pacer: one file served over FUSE whose reads and writes start no faster than a provisioned
volume's IOPS and bandwidth allow, evenly, as a cloud disk at its limit answers (a loop device over this file is
the lab's volume).

The kernel's block throttle (blk-throttle) caps the same rates but lets a burst through at the start of each time
slice and then holds an I/O for most of the slice (~90 ms): at 3,000 IOPS and iodepth 1 the mean was 333 µs with
the median at 4 µs and p99.9 at 98 ms, and iodepth 6 missed a 5 ms p99 that a real 3,000-IOPS volume meets (2 ms
evenly, Little's law). Here every request is admitted at the earliest time the rate allows after the previous
one (a token bucket of depth one, refilled continuously), so at saturation each I/O waits depth / cap. While
I/Os are queued the volume is busy, and a turn the pacer itself was late for (a busy machine held it off its CPU)
is kept, at most CATCH_UP_S back and never from before the volume went busy: a provisioned volume with a queue
serves at its cap, and a 2-core VM losing a third of its CPU to steal had delivered 500-1,400 of 1,500 IOPS in
100 ms windows.

`Bucket` is the pure rule; `serve` (shell) mounts the file with pyfuse3 (libfuse 3) and runs until SIGTERM.
Run as ``python -m storbench.lab.pacer --backing FILE --mount DIR --rates CONTROL.json``; the control file holds
``{"iops": N or null, "bw_bytes_per_s": N or null, "frozen": false, "backing": null}`` and is read again on
SIGHUP: a cap that changes mid-run (as a burst credit running out would), a stall (frozen) and its end, or another
backing file (`Control`).
"""

from __future__ import annotations

import argparse
import ctypes
import errno
import json
import os
import signal
import stat
import time
from dataclasses import dataclass, field
from pathlib import Path

from storbench.lab.pacer_snapshot import Snapshot

FILE_NAME = "volume"  # the one file in the mount: the loop device's backing file
CATCH_UP_S = 0.1  # how far behind now a queued I/O's turn may be kept (a burst of at most the queue: its depth)


@dataclass
class Bucket:
    """When each I/O may start: no sooner than 1/iops after the previous one started, nor sooner than the previous
    one's bytes at ``bw_bytes_per_s``; an idle volume keeps no credit (no burst beyond one I/O). Reads and writes
    share the limits, as a provisioned volume's do. Times in seconds on any monotonic clock.

    While the volume is busy (I/Os queued since ``busy_since_s``), an I/O takes the turn after the previous one even
    when it is already past, back to CATCH_UP_S before now and never before the volume went busy: the pacer was
    late, the volume not idle. Turns stay 1/iops apart; an I/O on a past turn starts at once."""

    iops: float | None = None
    bw_bytes_per_s: float | None = None
    _next_io_s: float = field(default=float("-inf"), repr=False)
    _next_byte_s: float = field(default=float("-inf"), repr=False)

    def set_rates(self, iops: float | None, bw_bytes_per_s: float | None) -> bool:
        """New caps; True when they differ from the old. Then the spacing starts over at the new caps: the I/Os
        waiting for a start the old caps gave are admitted again (`serve` wakes them), so a throttle's restore
        acts at once, not depth / old cap seconds later (64 s for 64 I/Os queued behind a cap of 1)."""
        if (iops, bw_bytes_per_s) == (self.iops, self.bw_bytes_per_s):
            return False
        self.iops, self.bw_bytes_per_s = iops, bw_bytes_per_s
        self.restart()
        return True

    def restart(self) -> None:
        """The spacing starts over: the next I/O starts when it is admitted, with no turn kept from before (new
        caps, or a stall's end: the I/Os it held are not a backlog to serve at once)."""
        self._next_io_s = self._next_byte_s = float("-inf")

    def admit(self, now_s: float, size_bytes: int, busy_since_s: float | None = None) -> float:
        """The start time of an I/O of ``size_bytes`` that arrives at ``now_s``; the bucket is charged for it.
        ``busy_since_s``: when the pacer last went from no I/O to some (this one's arrival if it found none): a turn
        since then the pacer was late for is kept, at most CATCH_UP_S back (the I/O starts right away)."""
        turn = max(self._next_io_s, self._next_byte_s)
        floor = now_s
        if busy_since_s is not None and turn > float("-inf"):
            floor = max(now_s - CATCH_UP_S, busy_since_s)
        start = max(floor, turn)
        if self.iops:
            self._next_io_s = start + 1 / self.iops
        if self.bw_bytes_per_s:
            self._next_byte_s = start + size_bytes / self.bw_bytes_per_s
        return start


class _Timespec(ctypes.Structure):
    _fields_ = [("tv_sec", ctypes.c_long), ("tv_nsec", ctypes.c_long)]


class _Itimerspec(ctypes.Structure):
    _fields_ = [("it_interval", _Timespec), ("it_value", _Timespec)]


_CLOCK_MONOTONIC, _TFD_NONBLOCK, _TFD_CLOEXEC, _TFD_TIMER_ABSTIME = 1, os.O_NONBLOCK, os.O_CLOEXEC, 1


def timer_at(libc: ctypes.CDLL, monotonic_s: float) -> int:
    """A timerfd that becomes readable at ``monotonic_s`` (time.monotonic's clock), to the microsecond: the event
    loop's own timeouts (epoll's) are whole milliseconds, three times the gap between I/Os at 3,000 IOPS."""
    fd = int(libc.timerfd_create(_CLOCK_MONOTONIC, _TFD_NONBLOCK | _TFD_CLOEXEC))
    if fd < 0:
        raise OSError(ctypes.get_errno(), "timerfd_create")
    whole = int(monotonic_s)
    spec = _Itimerspec(_Timespec(0, 0), _Timespec(whole, max(1, int((monotonic_s - whole) * 1e9))))
    if libc.timerfd_settime(fd, _TFD_TIMER_ABSTIME, ctypes.byref(spec), None) != 0:
        os.close(fd)
        raise OSError(ctypes.get_errno(), "timerfd_settime")
    return fd


@dataclass(frozen=True)
class Control:
    """What the control file asks of the pacer: the caps; ``frozen``: hold every new I/O until thawed (a stall, as
    a failing volume's); ``backing``: serve this file from now on (a copy taken earlier: a volume that lost the
    writes it acknowledged since, the test bed a durability check must catch)."""

    iops: float | None = None
    bw_bytes_per_s: float | None = None
    frozen: bool = False
    backing: str | None = None
    # take a copy of the file served, as it is at this moment, into this file (`Snapshot`); its id names the taking
    snapshot: str | None = None
    snapshot_id: str | None = None


def read_control(text: str) -> Control:
    """The control file's JSON; a missing or non-positive rate is no cap, anything unreadable the default. Pure."""
    raw = json.loads(text)

    def rate(name: str) -> float | None:
        value = raw.get(name)
        return float(value) if isinstance(value, (int, float)) and value > 0 else None

    def named(name: str) -> str | None:
        value = raw.get(name)
        return value if isinstance(value, str) and value else None

    return Control(rate("iops"), rate("bw_bytes_per_s"), raw.get("frozen") is True, named("backing"),
                   named("snapshot"), named("snapshot_id"))


def read_rates(text: str) -> tuple[float | None, float | None]:
    """(iops, bytes per second) from the control file's JSON. Pure."""
    control = read_control(text)
    return control.iops, control.bw_bytes_per_s


@dataclass
class _Open:
    fd: int  # the file served now
    path: str


@dataclass
class _Taking:
    snapshot: Snapshot | None = None  # the snapshot being copied (None: none, or it was served)
    snapshot_id: str | None = None  # the id of the last one asked for (taken or failed)
    refused: str | None = None  # a copy that could not be served: not tried again


def serve(backing: str, mount: str, rates: str) -> None:
    """Mount ``backing`` as ``mount``/volume, paced at the caps in the ``rates`` file (read again on SIGHUP), until
    SIGTERM or SIGINT; then unmount."""
    # lazy: FUSE and trio (0.17 s) only in the pacer's own process; the volume lab reads its control file
    import pyfuse3
    import trio

    # The lab sends SIGHUP as soon as the file is mounted, which is before the signal receiver below is open: until
    # then a SIGHUP is ignored (its default would end the pacer), and the control file is read again once it is open
    signal.signal(signal.SIGHUP, signal.SIG_IGN)
    libc = ctypes.CDLL(None, use_errno=True)

    def current() -> Control:
        return read_control(Path(rates).read_text())

    control = current()
    bucket = Bucket(control.iops, control.bw_bytes_per_s)
    thawed = trio.Event()
    if not control.frozen:
        thawed.set()

    waiting: set[trio.CancelScope] = set()  # I/Os waiting for their start: woken when the caps change or it freezes

    async def start_at(due_s: float) -> bool:
        """Wait until ``due_s``; False when the caps changed (or the volume froze) first: admit it again."""
        if due_s <= time.monotonic():
            return True
        timer = timer_at(libc, due_s)
        try:
            with trio.CancelScope() as scope:
                waiting.add(scope)
                try:
                    await trio.lowlevel.wait_readable(timer)
                finally:
                    waiting.discard(scope)
            return not scope.cancelled_caught
        finally:
            os.close(timer)

    # I/Os waiting for their turn, and when that last went from none to some: the volume is busy from then on, and
    # a turn since then the pacer was late for is kept (`Bucket.admit`). An I/O past its turn is served without a
    # pause (pread and pwrite block the loop), so those waiting are all the pacer holds.
    waiting_ios, busy_since_s = 0, 0.0

    async def paced(size_bytes: int) -> None:
        """Until this I/O may start: the volume thawed, and its turn at the caps in force."""
        nonlocal waiting_ios, busy_since_s
        if waiting_ios == 0:
            busy_since_s = time.monotonic()
        waiting_ios += 1
        try:
            while True:
                await thawed.wait()
                if await start_at(bucket.admit(time.monotonic(), size_bytes, busy_since_s)):
                    return
        finally:
            waiting_ios -= 1

    files = _Open(os.open(control.backing or backing, os.O_RDWR), control.backing or backing)
    size = os.fstat(files.fd).st_size
    taking = _Taking()
    file_inode = pyfuse3.ROOT_INODE + 1

    class PacedVolume(pyfuse3.Operations):
        def _attributes(self, inode: int) -> pyfuse3.EntryAttributes:
            entry = pyfuse3.EntryAttributes()
            if inode == pyfuse3.ROOT_INODE:
                entry.st_mode, entry.st_nlink, entry.st_size = stat.S_IFDIR | 0o700, 2, 0
            elif inode == file_inode:
                entry.st_mode, entry.st_nlink, entry.st_size = stat.S_IFREG | 0o600, 1, size
            else:
                raise pyfuse3.FUSEError(errno.ENOENT)
            entry.st_ino, entry.st_uid, entry.st_gid = inode, os.getuid(), os.getgid()
            entry.st_blksize = 4096
            entry.st_blocks = (entry.st_size + 511) // 512
            entry.attr_timeout = entry.entry_timeout = 3600
            return entry

        async def getattr(self, inode: int, ctx: object = None) -> pyfuse3.EntryAttributes:
            return self._attributes(inode)

        async def lookup(self, parent_inode: int, name: bytes, ctx: object = None) -> pyfuse3.EntryAttributes:
            if parent_inode != pyfuse3.ROOT_INODE or name != FILE_NAME.encode():
                raise pyfuse3.FUSEError(errno.ENOENT)
            return self._attributes(file_inode)

        async def opendir(self, inode: int, ctx: object) -> int:
            if inode != pyfuse3.ROOT_INODE:
                raise pyfuse3.FUSEError(errno.ENOTDIR)
            return inode

        async def readdir(self, fh: int, start_id: int, token: pyfuse3.ReaddirToken) -> None:
            if start_id == 0:
                pyfuse3.readdir_reply(token, FILE_NAME.encode(), self._attributes(file_inode), 1)

        async def open(self, inode: int, flags: int, ctx: object) -> pyfuse3.FileInfo:
            if inode != file_inode:
                raise pyfuse3.FUSEError(errno.EISDIR)
            return pyfuse3.FileInfo(fh=inode, direct_io=True, keep_cache=False)  # no page cache above the pacer

        async def read(self, fh: int, off: int, size_bytes: int) -> bytes:
            await paced(size_bytes)
            return os.pread(files.fd, size_bytes, off)

        async def write(self, fh: int, off: int, buf: bytes) -> int:
            await paced(len(buf))
            if taking.snapshot is not None:  # the blocks it lands on, as they were at the snapshot's moment
                taking.snapshot.before_write(off, len(buf))
            return os.pwrite(files.fd, buf, off)

        async def fsync(self, fh: int, datasync: bool) -> None:
            await thawed.wait()
            os.fdatasync(files.fd)

        async def statfs(self, ctx: object) -> pyfuse3.StatvfsData:
            data = pyfuse3.StatvfsData()
            data.f_bsize = data.f_frsize = 4096
            data.f_blocks = size // 4096
            data.f_namemax = 255
            return data

    def apply(new: Control, nursery: trio.Nursery) -> None:
        nonlocal thawed
        if bucket.set_rates(new.iops, new.bw_bytes_per_s) or new.frozen:  # waiting I/Os take the new caps, or wait
            for scope in list(waiting):  # for the thaw
                scope.cancel()
        if new.snapshot and new.snapshot_id and new.snapshot_id != taking.snapshot_id:
            take_snapshot(new.snapshot, new.snapshot_id, nursery)
        wanted = new.backing or backing  # no backing named: the volume's own file
        if wanted != files.path and wanted != taking.refused:  # a copy once refused is never served
            snapshot = taking.snapshot
            failed = ""
            if snapshot is not None and snapshot.path == wanted:  # served from now: every block kept first
                failed = snapshot.finish()
                taking.snapshot = None
            if not failed:
                try:
                    opened = os.open(wanted, os.O_RDWR)
                except OSError as exc:
                    failed = exc.strerror or str(exc)
                else:
                    os.close(files.fd)
                    files.fd, files.path = opened, wanted
            # the lab waits for one of these (`VolumeLab.serve_copy`); a copy that is no copy is not served, now or
            # at a later signal: the file served stays, and the lab says so
            taking.refused = wanted if failed else None
            mark(f"{wanted}.failed" if failed else f"{wanted}.served", failed or (new.snapshot_id or ""))
        if new.frozen and thawed.is_set():
            thawed = trio.Event()
        elif not new.frozen and not thawed.is_set():
            bucket.restart()  # the I/Os the stall held start from its end, at the caps
            thawed.set()

    def take_snapshot(path: str, snapshot_id: str, nursery: trio.Nursery) -> None:
        """A snapshot of the file served from this moment (`Snapshot`), said taken in ``path``.taken (its id), or
        failed in ``path``.failed; copied a few blocks at a time beside the I/O."""
        if taking.snapshot is not None:  # an earlier one never served: dropped
            taking.snapshot.close()
        taking.snapshot, taking.snapshot_id = None, snapshot_id
        try:
            snapshot = Snapshot(files.fd, path, size)
        except OSError as exc:
            mark(f"{path}.failed", exc.strerror or str(exc))
            return
        taking.snapshot = snapshot
        mark(f"{path}.taken", snapshot_id)

        async def copier() -> None:
            while taking.snapshot is snapshot and not snapshot.step():
                await trio.sleep(0)
            if taking.snapshot is snapshot and snapshot.failed:
                mark(f"{path}.failed", snapshot.failed)

        nursery.start_soon(copier)

    def mark(path: str, text: str) -> None:
        """A marker for the lab; one that cannot be written (a full disk) is said in the pacer's log, and the volume
        goes on being served (the lab, waiting for it, says it did not come)."""
        try:
            Path(path).write_text(text)
        except OSError as exc:  # to its log (its standard error)
            os.write(2, f"pacer: cannot write {path}: {exc.strerror or exc}\n".encode())

    async def run() -> None:
        async with trio.open_nursery() as nursery:
            nursery.start_soon(pyfuse3.main, 1, 4096)
            with trio.open_signal_receiver(signal.SIGTERM, signal.SIGINT, signal.SIGHUP) as signals:
                apply(current(), nursery)  # a change sent while SIGHUP was ignored
                async for signum in signals:
                    if signum == signal.SIGHUP:
                        apply(current(), nursery)
                        continue
                    nursery.cancel_scope.cancel()
                    break

    options = set(pyfuse3.default_options) | {"fsname=storbench-volume", "subtype=storbench"}
    pyfuse3.init(PacedVolume(), mount, options)
    try:
        trio.run(run)
    finally:
        pyfuse3.close(unmount=True)
        os.close(files.fd)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m storbench.lab.pacer", description=__doc__.splitlines()[0])
    parser.add_argument("--backing", required=True)
    parser.add_argument("--mount", required=True)
    parser.add_argument("--rates", required=True, help='JSON: {"iops": N, "bw_bytes_per_s": N}, read again on SIGHUP')
    args = parser.parse_args(argv)
    serve(args.backing, args.mount, args.rates)


if __name__ == "__main__":
    main()
