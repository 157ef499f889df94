"""What every command shares: the consoles, writing an output file, reading a plan, the options several
commands take."""

from __future__ import annotations

import argparse
import io
import math
import os
import stat
import sys
from collections.abc import Iterator
from contextlib import AbstractContextManager, contextmanager
from types import FrameType
from typing import TYPE_CHECKING, Any

from rich.console import Console
from rich.text import Text

from storbench.errors import UserError
from storbench.private_files import write_private
from storbench.safe_text import safe_text
from storbench.shell import interrupts_handled, interrupts_held

if TYPE_CHECKING:
    from storbench.config import LoadedPlan
    from storbench.execute.k8s_access import ClusterAccess
    from storbench.targets.s3 import S3Access

DEFAULT_DB = "results.db"


class SafeConsole(Console):
    """The console every command prints through: no text it is given is read as rich markup or emoji codes (a
    ``[/x]`` in a name cannot crash a table, ``[link=...]`` cannot make a link), and its control characters are
    shown escaped (``safe_text``), so text from a plan, an imported file or the database cannot move the cursor,
    retitle the terminal or hide what is printed. ``rich.text.Text`` renderables do not pass here: the renderers
    make their cells safe themselves (``report.tables.plain_cell``)."""

    def __init__(self, **options: Any) -> None:
        super().__init__(markup=False, emoji=False, **options)

    def render_str(self, text: str, **options: Any) -> Text:
        return super().render_str(safe_text(text, multiline=True), **options)


@contextmanager
def interrupted_once(cleaning: str) -> Iterator[None]:
    """Around a command that cleans up after itself: its first Ctrl-C interrupts it (KeyboardInterrupt, as by
    default); one pressed after that, while it stops fio and does ``cleaning``, is held, and the first of them says
    so in one line: a second Ctrl-C must not leave fio running on a lab being torn down. Main thread only."""
    pressed = 0

    def handler(signum: int, frame: FrameType | None) -> None:
        nonlocal pressed
        pressed += 1
        if pressed == 1:
            raise KeyboardInterrupt
        if pressed == 2:
            _say_held(cleaning)

    with interrupts_handled(handler):  # a SIGTERM or SIGHUP (`timeout`, a closed terminal) as Ctrl-C
        yield


def held_saying(cleaning: str) -> AbstractContextManager[None]:
    """Around a command's clean-up that must run to its end (`lab KIND down`): every Ctrl-C is held until it is
    done, and the first says so in one line. Main thread only."""
    return interrupts_held(lambda: _say_held(cleaning))


def _say_held(cleaning: str) -> None:
    """The one line for a Ctrl-C held (os.write: safe in a signal handler, unlike a console that may be printing)."""
    os.write(2, f"storbench: {cleaning} first; Ctrl-C is held until that is done\n".encode())


def file_console() -> Console:
    """A console that records what is printed, as plain text at a fixed width, for `-o FILE`."""
    return SafeConsole(record=True, width=1000, file=io.StringIO(), color_system=None)


def _console(stderr: bool = False) -> Console:
    console = SafeConsole(stderr=stderr, highlight=False, soft_wrap=False)
    if not console.is_terminal:  # a file or a pipe: do not squeeze tables into 80 columns, unless COLUMNS says
        columns = os.environ.get("COLUMNS", "")
        width = int(columns) if columns.isdigit() and 40 <= int(columns) <= 1000 else 240
        console = SafeConsole(stderr=stderr, highlight=False, soft_wrap=False, width=width)
    return console


def _read_plan(path: str) -> LoadedPlan:
    from storbench.config import load_plan_text  # pydantic's models: only for the commands that read a plan
    from storbench.config.plan_yaml import MAX_PLAN_BYTES

    try:  # a regular file, and no more of it than a plan may hold: /dev/zero, a disk or a FIFO had been read on
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
        with os.fdopen(fd, "rb") as handle:
            if not stat.S_ISREG(os.fstat(handle.fileno()).st_mode):
                if stat.S_ISDIR(os.fstat(handle.fileno()).st_mode):
                    raise IsADirectoryError(path)
                raise UserError(f"{path} is not a plan file (not a regular file)",
                                hint="give the plan's YAML file (storbench example quickstart -o plan.yaml writes "
                                "one)")
            data = handle.read(MAX_PLAN_BYTES + 1)  # one byte over: the loader's size limit says so
        text = data.decode("utf-8", errors="replace" if len(data) > MAX_PLAN_BYTES else "strict")
    except FileNotFoundError:
        raise UserError(f"plan file {path} does not exist", hint="storbench example quickstart shows one") from None
    except IsADirectoryError:
        raise UserError(f"{path} is a directory, not a plan file",
                        hint="give the plan's YAML file (storbench example quickstart -o plan.yaml writes "
                        "one)") from None
    except UnicodeDecodeError as exc:
        raise UserError(f"plan file {path} is not UTF-8 text (byte {exc.start})",
                        hint="save the plan as UTF-8 (iconv -t utf-8 FILE)") from None
    except OSError as exc:
        raise UserError(f"cannot read plan file {path}: {exc.strerror or exc}",
                        hint="give the plan's YAML file, one you can read") from None
    return load_plan_text(text, path)


def _write_output(text: str | bytes, output: str) -> None:
    """``text`` to the file ``output`` (created 0600), or to standard output for "-"; a binary file (Parquet) only
    to standard output when that is not a terminal."""
    if output and output != "-":
        from storbench.store.merge import is_sqlite_file  # lazy: the store only where an output file is written

        if is_sqlite_file(output):  # `-o results.db`, the --db of the same command, had been written over
            raise UserError(f"{output} is an SQLite database (a results database?): not writing over it",
                            hint="pass -o a new file name")
        try:
            write_private(output, text)
        except OSError as exc:
            raise UserError(f"cannot write {output}: {exc.strerror or exc}",
                            hint="pass -o a path in a directory you can write") from None
    elif isinstance(text, bytes):
        if sys.stdout.isatty():
            raise UserError("a Parquet file is not for the terminal", hint="add -o FILE.parquet")
        sys.stdout.flush()
        sys.stdout.buffer.write(text)
    else:
        sys.stdout.write(text)


# ---- options shared by several commands ---------------------------------------------------------------


def at_least_zero(text: str) -> float:
    """An option's number that must be finite and not below 0 (a percent, a limit): `nan` would compare false
    with everything and switch a gate off."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number (e.g. 5)") from None
    if not math.isfinite(value) or value < 0:
        raise argparse.ArgumentTypeError(f"{text!r}: give a finite number, 0 or more (e.g. 5)")
    return value


def above_zero(text: str) -> float:
    value = at_least_zero(text)
    if value == 0:
        raise argparse.ArgumentTypeError(f"{text!r}: give a number above 0 (e.g. 2)")
    return value


def whole_above_zero(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number (e.g. 500)") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"{text!r}: give a whole number of 1 or more (e.g. 500)")
    return value


def db_option(p: argparse.ArgumentParser) -> None:
    p.add_argument("--db", default=os.environ.get("STORBENCH_DB") or DEFAULT_DB,  # set but empty: as unset
                   help=f"results database: an SQLite file or a postgresql:// URL (default {DEFAULT_DB} or "
                   "$STORBENCH_DB)")


def fio_option(p: argparse.ArgumentParser) -> None:
    p.add_argument("--fio", default=None, help="fio binary (default: $STORBENCH_FIO or fio on PATH)")


def s3_options(p: argparse.ArgumentParser) -> None:
    """The operator's S3 settings: a plan names an S3 endpoint, but only these send keys to it."""
    p.add_argument("--s3-endpoint", action="append", default=[], metavar="URL",
                   help="an S3 endpoint the operator's keys may be sent to (repeatable; also $STORBENCH_S3_ENDPOINTS, "
                   "space-separated); an s3 target of the plan on any other endpoint is refused")
    p.add_argument("--s3-credentials-file", default=None, metavar="FILE",
                   help="S3 keys in ~/.aws/credentials format (default: AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY)")
    p.add_argument("--s3-profile", default=None, metavar="NAME",
                   help="the section of --s3-credentials-file (default: default)")


FIO_SERVERS_ENV = "STORBENCH_FIO_SERVERS"


def fio_server_options(p: argparse.ArgumentParser) -> None:
    """The fio servers the operator trusts: a plan names its `hosts.servers`, but only these are driven."""
    p.add_argument("--fio-server", action="append", default=[], metavar="HOST[:PORT]",
                   help="a fio server the plan's hosts.servers may name (repeatable; also $STORBENCH_FIO_SERVERS, "
                   "space-separated): fio's client trusts its servers, which can write files here")


def fio_servers(args: argparse.Namespace) -> frozenset[str]:
    """The operator's fio servers, as `fio --client` takes them ("host,port"), host names in lower case."""
    from storbench.config.lab import server_address

    named = [*args.fio_server, *os.environ.get(FIO_SERVERS_ENV, "").split()]
    try:
        return frozenset(server_address(server).lower() for server in named)
    except ValueError as error:
        raise UserError(f"--fio-server: {error}", hint="e.g. --fio-server node1 or --fio-server 10.0.0.7:8765"
                        ) from None


def cluster_options(p: argparse.ArgumentParser) -> None:
    """The operator's Kubernetes cluster for pvc targets, as kubectl takes it (a plan never names one), and the
    container images it lets them run."""
    p.add_argument("--kubeconfig", default=None, metavar="FILE",
                   help="kubeconfig of the cluster pvc targets run on (default: the k8s lab's, else $KUBECONFIG or "
                   "~/.kube/config)")
    p.add_argument("--context", default=None, metavar="NAME", help="its context (default: its current one)")
    p.add_argument("-n", "--namespace", default=None, metavar="NS",
                   help="namespace of every pvc target's pods, claims and config maps (overrides the plan's)")
    p.add_argument("--image", action="append", default=[], metavar="REF",
                   help="a container image the plan's pvc targets may name (repeatable; also $STORBENCH_IMAGES, "
                   "space-separated): an image runs any program in the cluster; storbench's own fio image is always "
                   "allowed")


IMAGES_ENV = "STORBENCH_IMAGES"


def allowed_images(args: argparse.Namespace) -> frozenset[str]:
    """The container images the operator lets pvc targets run (`--image`, $STORBENCH_IMAGES)."""
    from storbench.config.targets import IMAGE_RE

    named = [*args.image, *os.environ.get(IMAGES_ENV, "").split()]
    for image in named:
        if not IMAGE_RE.fullmatch(image):
            raise UserError(f"--image: {image!r} is not an image reference",
                            hint="e.g. --image registry.internal:5000/storbench/fio:fio-3.33")
    return frozenset(named)


def cluster_access(args: argparse.Namespace) -> ClusterAccess:
    from storbench.execute.k8s_access import ClusterAccess

    return ClusterAccess(args.kubeconfig, args.context)


def s3_access(args: argparse.Namespace) -> S3Access:
    from storbench.targets.s3 import S3Access

    if args.s3_profile and not args.s3_credentials_file:
        raise UserError("--s3-profile names a section of --s3-credentials-file, which is not given",
                        hint="add --s3-credentials-file ~/.aws/credentials, or drop --s3-profile")
    return S3Access.of(args.s3_endpoint, args.s3_credentials_file, args.s3_profile, os.environ)


def where_option(p: argparse.ArgumentParser, help_text: str) -> None:
    p.add_argument("--where", action="append", default=[], metavar="FIELD=VALUE", help=help_text)


def filters(p: argparse.ArgumentParser, run_help: str) -> None:
    """--run, --target and --where; read them back with `selection.where_items(args.where, args.target)`."""
    p.add_argument("--run", default="", help=run_help)
    p.add_argument("--target", action="append", default=[], help="only this target (repeatable)")
    where_option(p, "only records whose FIELD equals VALUE, e.g. rw=randread, bs=4k (repeatable)")
