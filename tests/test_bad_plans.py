"""Malformed plans: every one must end in exit status 2 and ONE line that points at the file, the line and
the key path of the problem (with a hint where one helps), before any fio run and without a traceback."""

from __future__ import annotations

import os
import shutil
import sqlite3
import textwrap
from contextlib import closing
from dataclasses import dataclass
from pathlib import Path

import pytest

from storbench.cli import main

PLAN_NAME = "bad-plan.yaml"
HAVE_FIO = shutil.which("fio") is not None
# Errors found only after asking the real fio binary (its engines and options) or checking the targets.
needs_fio = [pytest.mark.fio, pytest.mark.skipif(not HAVE_FIO, reason="needs fio on PATH")]

# A valid plan; line numbers: 1 name, 2 targets, 3 scratch, 4 workload, 5 rw, 6 bs, 7 runtime.
# Lines appended to it start at line 8.
BASE = textwrap.dedent(
    """\
    name: bad
    targets:
      scratch: {kind: path, path: ./data, size: 1MiB}
    workload:
      rw: randread
      bs: 4k
      runtime: 1s
    """
)


def _plan(text: str) -> str:
    return textwrap.dedent(text)


@dataclass(frozen=True)
class Bad:
    """A malformed plan and where its error must point: ``line`` and ``key`` (None: no key path in the
    message, e.g. a YAML syntax error), plus texts the line must contain (message parts, hints)."""

    text: str
    line: int
    key: str | None
    says: tuple[str, ...] = ()
    command: str = "plan"  # or "run"
    absent: tuple[str, ...] = ()  # texts the line must NOT contain


def case(name: str, bad: Bad, *, marks: object = ()) -> object:
    return pytest.param(bad, id=name, marks=marks)


BAD_PLANS = [
    # ---- unknown keys ------------------------------------------------------------------------------
    case("unknown-top-level-key", Bad(BASE + "repeats: 3\n", 8, "repeats",
                                      ("unknown key 'repeats'", "did you mean 'repeat'?"))),
    case("unknown-top-level-key-run", Bad(BASE + "worklaod: {}\n", 8, "worklaod",
                                          ("unknown key 'worklaod'", "did you mean 'workload'?"), command="run")),
    case("unknown-workload-key", Bad(BASE + "  iodepht: 4\n", 8, "workload.iodepht",
                                     ("unknown key 'iodepht'", "did you mean 'iodepth'?"))),
    case("unknown-target-key", Bad(_plan("""\
        name: bad
        targets:
          scratch:
            kind: path
            path: ./data
            size: 1MiB
            sise: 2MiB
        workload:
          rw: read
        """), 7, "targets.scratch.sise", ("unknown key 'sise'", "did you mean 'size'?"))),
    # ---- sweeps and counts that say nothing, or something else than meant (a review) -------------------
    case("clients-empty", Bad(BASE + "clients: []\n", 8, "clients", ("an empty list sweeps nothing",))),
    case("clients-twice", Bad(BASE + "clients: [1, 1]\n", 8, "clients", ("1 is listed twice",))),
    case("repeat-true", Bad(BASE + "repeat: true\n", 8, "repeat", ("not a whole number",))),
    case("exclude-empty-list", Bad(BASE.replace("bs: 4k", "bs: [4k, 8k]") + "exclude: [{bs: []}]\n", 8,
                                   "exclude[0].bs", ("an empty list excludes nothing",))),
    case("exclude-hint-in-the-plans-units", Bad(BASE.replace("runtime: 1s", "runtime: [90s, 2m]")
                                                + "exclude: [{runtime: 1m}]\n", 8, "exclude[0].runtime",
                                                ("values in the plan: 90s, 2m",), absent=("1m30s",))),
    case("precondition-bs-not-sectors", Bad(BASE.replace("size: 1MiB}", "size: 1MiB, precondition: "
                                                         "{fill: 1x, bs: 1000}}"), 3, "targets.scratch.precondition",
                                            ("bs 1000 is not a positive multiple of 512 bytes",))),
    # ---- targets -----------------------------------------------------------------------------------
    case("unknown-target-kind", Bad(_plan("""\
        name: bad
        targets:
          scratch:
            kind: pth
            path: ./data
            size: 1MiB
        workload:
          rw: read
        """), 3, "targets.scratch", ("unknown target kind 'pth'", "did you mean 'path'?"))),
    case("target-without-kind", Bad(_plan("""\
        name: bad
        targets:
          scratch: {path: ./data, size: 1MiB}
        workload:
          rw: read
        """), 3, "targets.scratch", ("no 'kind'", "path, block"))),
    case("missing-target-size", Bad(_plan("""\
        name: bad
        targets:
          scratch:
            kind: path
            path: ./data
        workload:
          rw: read
        """), 3, "targets.scratch.size", ("required key 'size' is missing", "hint: add it"))),
    case("bad-size-string", Bad(_plan("""\
        name: bad
        targets:
          scratch:
            kind: path
            path: ./data
            size: 12 parsecs
        workload:
          rw: read
        """), 6, "targets.scratch.size", ("not a size: '12 parsecs'", "256MiB"))),
    case("no-targets", Bad(BASE.replace("  scratch: {kind: path, path: ./data, size: 1MiB}\n", "").replace(
        "targets:", "targets: {}"), 2, "targets", ("at least one target",))),
    case("target-path-with-dollar", Bad(BASE.replace("./data", "./$HOME"), 3, "targets.scratch.path",
                                        ("'./$HOME'", "characters"))),
    case("block-device-not-under-dev", Bad(_plan("""\
        name: bad
        targets:
          disk: {kind: block, device: /tmp/disk.img}
        workload:
          rw: read
        """), 3, "targets.disk.device", ("must be a /dev/ path",))),
    # ---- required keys -----------------------------------------------------------------------------
    case("missing-workload", Bad(_plan("""\
        name: bad
        targets:
          scratch: {kind: path, path: ./data, size: 1MiB}
        """), 1, "workload", ("required key 'workload' is missing",))),
    case("missing-name", Bad(_plan("""\
        targets:
          scratch: {kind: path, path: ./data, size: 1MiB}
        workload:
          rw: read
        """), 1, "name", ("required key 'name' is missing", "hint: add it"))),
    case("plan-name-with-space", Bad(BASE.replace("name: bad", "name: 'bad name'"), 1, "name",
                                     ("letters, digits",))),
    # ---- workload values ---------------------------------------------------------------------------
    case("bad-bs-string", Bad(BASE.replace("bs: 4k", "bs: 4kk"), 6, "workload.bs", ("not a size: '4kk'",))),
    case("bad-duration", Bad(BASE.replace("runtime: 1s", "runtime: 5 minutes"), 7, "workload.runtime",
                             ("not a duration: '5 minutes'", "500ms"))),
    case("runtime-below-1s", Bad(BASE.replace("runtime: 1s", "runtime: 500ms"), 7, "workload.runtime",
                                 ("0.5s is too short", ">= 1s"))),
    case("runtime-fraction", Bad(BASE.replace("runtime: 1s", "runtime: 1.5s"), 7, "workload.runtime",
                                 ("whole seconds",))),
    case("iodepth-0", Bad(BASE + "  iodepth: 0\n", 8, "workload.iodepth", ("greater than or equal to 1",),
                          absent=("[0]",))),
    case("iodepth-0-in-sweep", Bad(BASE + "  iodepth: [1, 0]\n", 8, "workload.iodepth[1]",
                                   ("greater than or equal to 1",))),
    case("iodepth-not-a-number", Bad(BASE + "  iodepth: four\n", 8, "workload.iodepth", ("'four'",))),
    case("bs-not-multiple-of-512", Bad(BASE.replace("bs: 4k", "bs: 1000"), 6, "workload.bs",
                                       ("block size 1000", "multiple of 512"))),
    case("rw-typo-scalar", Bad(BASE.replace("rw: randread", "rw: randred"), 5, "workload.rw",
                               ("'randred' is not allowed", "did you mean 'randread'?"), absent=("[0]",))),
    case("rw-typo-in-list", Bad(BASE.replace("rw: randread", "rw: [read, randred]"), 5, "workload.rw[1]",
                                ("'randred' is not allowed", "did you mean 'randread'?"))),
    case("rw-typo-only-list-item", Bad(BASE.replace("rw: randread", "rw: [randred]"), 5, "workload.rw[0]",
                                       ("did you mean 'randread'?",))),
    case("rwmixread-over-100", Bad(BASE + "  rwmixread: 150\n", 8, "workload.rwmixread",
                                   ("less than or equal to 100",))),
    case("duplicate-in-sweep", Bad(BASE + "  iodepth: [1, 4, 1]\n", 8, "workload.iodepth", ("1 is listed twice",))),
    case("duplicate-in-sweep-same-size", Bad(BASE.replace("bs: 4k", "bs: [4k, 4096]"), 6, "workload.bs",
                                             ("listed twice",))),
    case("empty-sweep", Bad(BASE.replace("bs: 4k", "bs: []"), 6, "workload.bs", ("empty list sweeps nothing",))),
    case("repeat-0", Bad(BASE + "repeat: 0\n", 8, "repeat", ("greater than or equal to 1",))),
    case("order-typo", Bad(BASE + "order: interleave\n", 8, "order", ("did you mean 'interleaved'?",))),
    # ---- YAML itself -------------------------------------------------------------------------------
    case("duplicate-yaml-key", Bad(BASE + "  bs: 8k\n", 8, "workload.bs", ("key 'bs' appears twice",
                                                                         "remove one of them"))),
    case("yaml-bad-indentation", Bad(_plan("""\
        name: bad
        targets:
          scratch: {kind: path, path: ./data, size: 1MiB}
        workload:
          rw: read
            bs: 4k
        """), 6, None, ("YAML syntax error", "indentation"))),
    case("yaml-bad-dedent", Bad(_plan("""\
        name: bad
        targets:
          scratch: {kind: path, path: ./data, size: 1MiB}
        workload:
          rw: read
         bs: 4k
        """), 6, None, ("YAML syntax error",))),
    case("yaml-tab-indent", Bad("name: bad\n\ttargets: {}\n", 2, None, ("YAML syntax error", "'\\t'"))),
    case("plan-is-a-list", Bad("- name: bad\n- workload: {}\n", 1, None, ("a plan must be a mapping",))),
    case("empty-file", Bad("", 1, None, ("the plan is empty",))),
    case("only-comments", Bad("# nothing here\n\n", 1, None, ("the plan is empty",))),
    # ---- fio pass-through options ------------------------------------------------------------------
    case("fio-managed-option", Bad(BASE + "  fio:\n    bs: 8k\n", 9, "workload.fio.bs",
                                   ("fio option 'bs' is set by storbench", "hint: use workload.bs"))),
    case("fio-managed-filename", Bad(BASE + "  fio: {filename: /etc/passwd}\n", 8, "workload.fio.filename",
                                     ("set by storbench", "use the target"))),
    case("fio-refused-option", Bad(BASE + "  fio:\n    exec_prerun: rm -rf /\n", 9, "workload.fio.exec_prerun",
                                   ("fio option 'exec_prerun' runs programs", "not allowed in a plan"))),
    case("fio-value-newline", Bad(BASE + '  fio:\n    verify: "md5\\nexec_prerun=touch /tmp/x"\n', 9,
                                  "workload.fio.verify", ("could change the fio job file", "newlines"))),
    case("fio-value-dollar", Bad(BASE + '  fio:\n    buffer_pattern: "$HOME"\n', 9, "workload.fio.buffer_pattern",
                                 ("'$HOME'", "could change the fio job file")), ),
    case("fio-value-dollar-run", Bad(BASE + '  fio:\n    buffer_pattern: "${HOME}"\n', 9,
                                     "workload.fio.buffer_pattern", ("could change the fio job file",),
                                     command="run")),
    case("fio-value-semicolon", Bad(BASE + '  fio:\n    verify: "md5;x"\n', 9, "workload.fio.verify",
                                    ("'md5;x'", "could change the fio job file"))),
    case("fio-value-section-in-sweep", Bad(BASE + "  fio:\n    verify: [md5, '[evil]']\n", 9, "workload.fio.verify",
                                           ("'[evil]'",))),
    case("fio-option-name-uppercase", Bad(BASE + "  fio:\n    Verify: md5\n", 9, "workload.fio.Verify",
                                          ("is not a fio option name",))),
    case("fio-unknown-option", Bad(BASE + "  fio:\n    iodepht_batch: 4\n", 9, "workload.fio.iodepht_batch",
                                   ("unknown fio option 'iodepht_batch'",
                                    "did you mean 'iodepth_batch'? 'iodepth_batch' is allowed"))),
    # the close option is allowed: the hint must not read as if it were refused too
    case("fio-unknown-option-close-to-allowed", Bad(BASE + "  fio: {rate_iop: 100}\n", 8, "workload.fio.rate_iop",
                                                    ("unknown fio option 'rate_iop'",
                                                     "hint: did you mean 'rate_iops'? 'rate_iops' is allowed)"),
                                                    absent=("not allowed",))),
    case("fio-unknown-option-nothing-close", Bad(BASE + "  fio: {qqqzzz: 1}\n", 8, "workload.fio.qqqzzz",
                                                 ("'qqqzzz' is not on storbench's list", "not allowed in a plan",
                                                  "storbench docs plan-reference workload.fio"))),
    case("fio-unknown-option-run", Bad(BASE + "  fio:\n    iodepht_batch: 4\n", 9, "workload.fio.iodepht_batch",
                                       ("did you mean 'iodepth_batch'?",), command="run")),
    # ---- pass-through options that write files or devices (security review) -------------------------
    case("fio-mem-maps-a-file", Bad(BASE + "  fio:\n    mem: mmapshared:/etc/passwd\n", 9, "workload.fio.mem",
                                    ("'mmapshared:/etc/passwd' is not allowed for 'mem'", "malloc"))),
    case("fio-mem-maps-a-device", Bad(BASE + "  fio:\n    iomem: mmap:/dev/sda\n", 9, "workload.fio.iomem",
                                      ("'mmap:/dev/sda' is not allowed for 'iomem'",))),
    case("fio-file-append", Bad(BASE + "  fio:\n    file_append: 1\n", 9, "workload.fio.file_append",
                                ("fio option 'file_append' could write",))),
    case("fio-allow-mounted-write", Bad(BASE + "  fio:\n    allow_mounted_write: 1\n", 9,
                                        "workload.fio.allow_mounted_write", ("could write to a mounted device",))),
    case("fio-fill-device", Bad(BASE + "  fio:\n    fill_device: 1\n", 9, "workload.fio.fill_device",
                                ("could write",))),
    case("fio-state-file", Bad(BASE + "  fio:\n    verify_state_save: 1\n", 9, "workload.fio.verify_state_save",
                               ("state, log or trace files",))),
    case("fio-profile", Bad(BASE + "  fio:\n    profile: tiobench\n", 9, "workload.fio.profile",
                            ("state, log or trace files",))),
    case("fio-priority", Bad(BASE + "  fio:\n    prioclass: 1\n", 9, "workload.fio.prioclass",
                             ("changes priorities",))),
    case("fio-rbd-pool-on-path", Bad(BASE + "  fio:\n    pool: rbd\n", 9, "workload.fio.pool",
                                     ("names a cluster, pool, image",))),
    case("fio-bad-value-grammar", Bad(BASE + "  fio:\n    rate_iops: lots\n", 9, "workload.fio.rate_iops",
                                      ("'lots' is not allowed for 'rate_iops'", "IOPS"))),
    case("fio-engine-option-other-engine", Bad(BASE + "  fio:\n    hipri: 1\n", 9, "workload.fio.hipri",
                                               ("'hipri' belongs to ioengine io_uring, not libaio",))),
    case("rbd-engine-on-path-target", Bad(BASE + "  ioengine: rbd\n", 8, "workload.ioengine",
                                          ("ioengine 'rbd' cannot drive a path target",))),
    case("net-engine", Bad(BASE + "  ioengine: [psync, net]\n", 8, "workload.ioengine",
                           ("ioengine 'net' cannot drive a path target", "libaio"))),
    case("trailing-newline-in-name", Bad(BASE.replace("name: bad", 'name: "bad\\n"'), 1, "name",
                                         ("name must be",))),
    case("trailing-newline-in-path", Bad(BASE.replace("path: ./data", 'path: "./data\\n"'), 3,
                                         "targets.scratch.path", ("has characters",))),
    case("trailing-newline-in-rbd-image", Bad(BASE.replace("{kind: path, path: ./data, size: 1MiB}",
                                                           '{kind: rbd, image: "img\\n", size: 1GiB}'), 3,
                                              "targets.scratch.image", ("must be letters",))),
    # ---- ioengine ----------------------------------------------------------------------------------
    case("ioengine-exec", Bad(BASE + "  ioengine: exec\n", 8, "workload.ioengine",
                              ("ioengine 'exec' cannot drive a path target", "libaio"))),
    case("ioengine-exec-run", Bad(BASE + "  ioengine: [psync, exec]\n", 8, "workload.ioengine",
                                  ("ioengine 'exec' cannot drive",), command="run")),
    case("ioengine-unknown", Bad(BASE + "  ioengine: libaoi\n", 8, "workload.ioengine",
                                 ("ioengine 'libaoi' cannot drive", "did you mean 'libaio'?"))),
    case("ioengine-not-a-name", Bad(BASE + "  ioengine: 'lib aio'\n", 8, "workload.ioengine",
                                    ("not an engine name",))),
    # ---- what fio lays out -------------------------------------------------------------------------
    case("offset-increment-share-of-a-file", Bad(BASE + "  numjobs: 16\n  fio: {offset_increment: 100%}\n", 9,
                                                  "workload.fio.offset_increment",
                                                  ("100% is a share of a file", "grows with every repetition",
                                                   "as a size"))),
    case("offset-share-of-a-file-in-a-sweep", Bad(BASE + "  fio: {offset: [0, 50%]}\n", 8, "workload.fio.offset",
                                                   ("50% is a share of a file",))),
    case("verify-async-threads-beyond-reason", Bad(BASE + "  fio: {verify_async: 1000000}\n", 8,
                                                    "workload.fio.verify_async", ("a whole number 0-64",))),
    # fio copies a directory and its file's name into one 4,096-byte buffer, and Linux takes no name over 255 bytes
    # (plan had crashed on ENAMETOOLONG); the length is said, not the text, which would fill the screen
    case("path-longer-than-fio-takes", Bad(BASE.replace("path: ./data", "path: /srv/" + "/".join(["a" * 9] * 150)),
                                           3, "targets.scratch.path", ("it is 1,504 characters long: a path of "
                                                                       "at most 1,024 is taken",),
                                           absent=("aaaaaaaaa/aaaaaaaaa",))),
    case("path-name-longer-than-linux-takes", Bad(BASE.replace("path: ./data", "path: ./" + "d" * 256), 3,
                                                  "targets.scratch.path", ("one of its names is 256 bytes long: Linux "
                                                                           "takes at most 255 between slashes",))),
    case("device-name-longer-than-linux-takes", Bad(BASE.replace("{kind: path, path: ./data, size: 1MiB}",
                                                                 "{kind: block, device: /dev/" + "d" * 300 + "}"), 3,
                                                    "targets.scratch.device", ("one of its names is 300 bytes",))),
    # ---- repetitions that stop when decided ---------------------------------------------------------
    case("until-decided-without-compare", Bad(BASE + "repeat: {min: 3, max: 10, until: decided}\n", 8,
                                              "repeat.until", ("needs the comparison to decide",
                                                               "sweep the setting to compare"))),
    case("until-decided-hints-the-sides-the-plan-sweeps", Bad(
        BASE + "  ioengine: [psync, libaio]\n  iodepth: [1, 8]\nrepeat: {min: 3, max: 10, until: decided}\n", 10,
        "repeat.until", ("add compare: {baseline: ioengine=psync, candidate: ioengine=libaio}",))),
    case("until-decided-hints-a-swept-block-size", Bad(
        BASE.replace("bs: 4k", "bs: [4k, 64k]") + "repeat: {min: 3, max: 10, until: decided}\n", 8,
        "repeat.until", ("add compare: {baseline: bs=4k, candidate: bs=64k}",))),
    case("until-bad-text", Bad(BASE + "repeat: {min: 3, max: 10, until: soon}\n", 8, "repeat.until",
                               ("must be 'decided' or like 'ci <= 5%'",))),
    case("repeat-max-below-min", Bad(BASE + "repeat: {min: 5, max: 3, until: 'ci <= 5%'}\n", 8, "repeat.max",
                                     ("below repeat.min",))),
    case("adaptive-needs-interleaved", Bad(BASE + "repeat: {min: 3, max: 9, until: 'ci <= 5%'}\norder: sequential\n",
                                           9, "order", ("needs order: interleaved",))),
    case("adaptive-across-a-blocked-setting", Bad(BASE + "repeat: {min: 3, max: 9, until: decided}\n"
                                                  "compare: {baseline: osds=3, candidate: osds=4}\n", 9,
                                                  "compare.baseline", ("needs a cluster per value",
                                                                       "lab.ceph.bring_up: each_repetition"))),
    case("adaptive-across-a-blocked-setting-side-by-side", Bad(
        BASE + "repeat: {min: 3, max: 9, until: decided}\ncompare: {baseline: osds=3, candidate: osds=4}\n"
        "lab:\n  ceph: {osds: [3, 4], pool_size: 1, bring_up: side_by_side}\n", 9, "compare.baseline",
        ("side by side, each side is one cluster", "lab.ceph.bring_up: each_repetition"), absent=("side_by_side)",))),
    case("compare-side-selects-nothing", Bad(
        BASE + "repeat: {min: 3, max: 9, until: decided}\ncompare: {baseline: rw=randread, candidate: rw=randred}\n",
        9, "compare.candidate", ("no point of the plan has rw=randred; the plan's values: randread",))),
    case("compare-side-unknown-key", Bad(
        BASE + "repeat: {min: 3, max: 9, until: decided}\ncompare: {baseline: rww=randread, candidate: bs=4k}\n",
        9, "compare.baseline", ("unknown key 'rww'", "did you mean 'rw'?"))),
    case("compare-side-a-direction-the-pattern-has-not", Bad(
        BASE + "repeat: {min: 3, max: 9, until: decided}\ncompare: {baseline: 'bs=4k,direction=read', "
        "candidate: 'bs=4k,direction=write'}\n", 9, "compare.candidate",
        ("no point of the plan has direction=write; the plan's values: read",))),
    case("compare-sides-the-same", Bad(
        BASE + "repeat: {min: 3, max: 9, until: decided}\ncompare: {baseline: bs=4k, candidate: rw=randread}\n",
        9, "compare.candidate", ("selects the same points as the baseline's 'bs=4k'",))),
    case("adaptive-across-labs-brought-up-once", Bad(
        BASE + "repeat: {min: 3, max: 9, until: 'ci <= 5%'}\nlab:\n  ceph: {osds: [3, 4], pool_size: 1}\n", 8,
        "repeat", ("until: looks after each round", "need 2 labs brought up one after another (the second: osds=4)",
                   "lab.ceph.bring_up: each_repetition"))),
    case("nested-unknown-key-repeat", Bad(BASE + "repeat: {mxa: 3, max: 4, until: decided}\n", 8, "repeat.mxa",
                                          ("unknown key 'mxa'", "did you mean 'max'?"))),
    case("nested-unknown-key-fault", Bad(BASE + "faults: [{onn: 1}]\n", 8, "faults[0].onn",
                                         ("unknown key 'onn'", "did you mean 'on'?"))),
    case("nested-unknown-key-expect", Bad(BASE.replace("size: 1MiB}", "size: 1MiB, expect: {iopz: 5}}"), 3,
                                          "targets.scratch.expect.iopz", ("did you mean 'iops'?",))),
    case("unknown-key-where-none-are-taken", Bad(BASE + "lab: {nfs: {foo: 1}}\n", 8, "lab.nfs.foo",
                                                 ("unknown key 'foo'", "it takes no keys here"),
                                                 absent=("known keys: )",))),
    case("missing-key-hint-keeps-its-capitals", Bad(BASE.replace("  rw: randread\n", ""), 4, "workload.rw",
                                                    ("add it: I/O pattern(s)",))),
    case("a-fraction-written-as-a-plain-percent", Bad(
        BASE + "compare: {baseline: bs=4k, candidate: rw=randread, margin: 5}\n", 8, "compare.margin",
        ("5 is not less than 100%", "write 5% for 5 percent: a plain number is a fraction"))),
    case("a-margin-with-a-fixed-repeat", Bad(
        BASE + "compare: {baseline: bs=4k, candidate: rw=randread, margin: 5%}\n", 8, "compare.margin",
        ("equivalence within a margin is what repeat: {until: decided} decides", "drop margin"))),
    case("a-duration-bound-said-as-a-duration", Bad(BASE + "timeout_grace: 2h\n", 8, "timeout_grace",
                                                    ("'2h' is not at most 1h", "give at most 1h"),
                                                    absent=("3600",))),
    case("a-word-for-a-number", Bad(BASE.replace("bs: 4k\n", "bs: 4k\n  iodepth: lots\n"), 7, "workload.iodepth",
                                    ("'lots' is not a whole number",), absent=("Input should",))),
    case("a-date-for-a-name", Bad(BASE.replace("name: bad", "name: 2024-01-01"), 1, "name",
                                  ("2024-01-01 was read as a date, not text", "quote it"))),
    case("a-number-for-a-kind", Bad(BASE.replace("kind: path, ", "kind: 5, "), 3, "targets.scratch",
                                    ("kind 5 is not a target kind", "kinds: path"), absent=("has no 'kind'",))),
    case("too-many-exclude-rules", Bad(BASE.replace("bs: 4k\n", "bs: [4k, 8k]\n") + "exclude:\n"
                                       + "  - {bs: 8k}\n" * 201, 8,
                                       "exclude", ("201 exclude rules; storbench takes at most 200",))),
    case("steady-state-with-repeat", Bad(BASE + "steady_state: {window: 5}\nrepeat: 3\n", 9, "repeat",
                                         ("its rounds are the repetitions", "drop repeat"))),
    case("steady-state-window-above-max", Bad(BASE + "steady_state: {window: 8, max_rounds: 5}\n", 8,
                                              "steady_state.max_rounds", ("above max_rounds 5",))),
    case("steady-state-interleaved", Bad(BASE + "steady_state: {window: 5}\norder: interleaved\n", 9, "order",
                                         ("back to back",))),
    case("steady-state-one-round-after", Bad(BASE + "steady_state: {confirm: 1}\n", 8, "steady_state.confirm",
                                             ("gives no interval", "confirm: 5"))),
    case("steady-state-bad-range", Bad(BASE + "steady_state: {range: 120%}\n", 8, "steady_state.range",
                                       ("less than 1",))),
    # a cluster per value and round alternates only in interleaved rounds: sequential had run every osds=3 cluster
    # before any osds=4 one, and was described as "A B B A, paired"
    case("fresh-cluster-each-round-in-blocks", Bad(
        BASE + "order: sequential\nlab:\n  ceph: {osds: [3, 4], pool_size: 1, bring_up: each_repetition}\n", 8,
        "order", ("needs order: interleaved", "drop order"))),
    # steady_state and search run each point's rounds back to back: side by side, their clusters ran in blocks, and
    # `plan` had said "repetitions A B B A"
    case("steady-state-clusters-side-by-side", Bad(
        BASE + "steady_state: {window: 3}\nlab:\n  ceph: {osds: [1, 2], pool_size: 1, bring_up: side_by_side}\n", 10,
        "lab.ceph.bring_up", ("steady_state runs each point's rounds back to back", "bring_up: once"))),
    # the lab has four slots side by side: osds_per_device and db_device need a cluster per value too (6 clusters
    # had been counted as 1)
    case("more-clusters-side-by-side-than-slots", Bad(
        BASE + "lab:\n  ceph: {osds_per_device: [1, 2, 4], devices: 2, pool_size: 2, db_device: [none, fast], "
        "bring_up: side_by_side}\n", 9, "lab.ceph.bring_up", ("side_by_side would run 6 Ceph clusters at once",))),
    case("search-clusters-side-by-side", Bad(
        BASE + "search: {range: [1, 64], slo: p99<=1ms}\nlab:\n  ceph: {osds: [1, 2], pool_size: 1, "
        "bring_up: side_by_side}\n", 10, "lab.ceph.bring_up", ("search runs each point's rounds back to back",))),
    case("steady-state-fresh-cluster-each-round", Bad(
        BASE + "steady_state: {window: 3}\nlab:\n  ceph: {osds: [3, 4], bring_up: each_repetition}\n", 8,
        "steady_state", ("fresh one every round",))),
    case("search-and-a-swept-iodepth", Bad(BASE.replace("bs: 4k\n", "bs: 4k\n  iodepth: [1, 4]\n")
                                           + "search: {range: [1, 64], slo: p99<=1ms}\n", 7, "workload.iodepth",
                                           ("search chooses the iodepth values itself",))),
    # a load that never reaches the storage along the axis: the search had said "IOPS saturated" of it
    case("search-along-iodepth-with-a-sync-engine", Bad(BASE.replace("bs: 4k\n", "bs: 4k\n  ioengine: psync\n")
                                                       + "search: {range: [1, 64], slo: p99<=1ms}\n", 9, "search.axis",
                                                       ("a sync engine keeps one I/O a job in flight",))),
    case("search-along-iodepth-with-buffered-libaio", Bad(BASE.replace("bs: 4k\n", "bs: 4k\n  direct: false\n")
                                                         + "search: {range: [1, 64], slo: p99<=1ms}\n", 9,
                                                         "search.axis", ("Linux runs buffered libaio I/O one at",))),
    case("search-along-iodepth-with-file-operations", Bad(BASE.replace("rw: randread", "rw: create")
                                                          + "search: {range: [1, 64], slo: p99<=1ms}\n", 8,
                                                          "search.axis", ("its operations take no iodepth",))),
    case("search-with-a-rate-limit", Bad(BASE.replace("bs: 4k\n", "bs: 4k\n  fio: {rate_iops: 100}\n")
                                        + "search: {range: [1, 64], slo: p99<=1ms}\n", 7, "workload.fio.rate_iops",
                                        ("search along iodepth with rate_iops: fio holds each job to it",))),
    case("search-with-an-exclude-on-its-axis", Bad(BASE + "search: {range: [1, 64], slo: p99<=1ms}\n"
                                                   "exclude:\n  - {iodepth: 48}\n", 10, "exclude[0]",
                                                   ("names iodepth, which the search chooses itself",))),
    case("search-range-reversed", Bad(BASE + "search: {range: [64, 1], slo: p99<=1ms}\n", 8, "search.range",
                                      ("low below high",))),
    case("search-bad-objective", Bad(BASE + "search: {range: [1, 64], slo: p98 under 1ms}\n", 8, "search.slo",
                                     ("is not an objective like p99<=10ms",))),
    case("search-objective-in-minutes", Bad(BASE + "search: {range: [1, 64], slo: p99<=10m}\n", 8, "search.slo",
                                            ("is 10 minutes: did you mean p99<=10ms?",))),
    case("search-unknown-axis", Bad(BASE + "search: {axis: bs, range: [1, 64], slo: p99<=1ms}\n", 8,
                                    "search.axis", ("'bs' is not allowed",))),
    case("search-with-steady-state", Bad(BASE + "search: {range: [1, 8], slo: p99<=1ms}\nsteady_state: {}\n", 8,
                                         "search", ("do not go together",))),
    case("search-until-decided", Bad(BASE + "search: {range: [1, 8], slo: p99<=1ms}\n"
                                     "repeat: {min: 3, max: 9, until: ci <= 5%}\n", 9, "repeat",
                                     ("fixed number of repetitions",))),
    case("search-clients-beyond-the-hosts", Bad(BASE + "search: {axis: clients, range: [1, 4], slo: p99<=1ms}\n"
                                                "lab: {hosts: {count: 2}}\n", 8, "search.range",
                                                ("clients: 4 needs 4 fio servers, the plan has 2",))),
    case("compare-bad-selector", Bad(BASE + "compare: {baseline: 'bs', candidate: bs=8k}\n", 8,
                                     "compare.baseline", ("is not KEY=VALUE",))),
    # ---- exclude rules -----------------------------------------------------------------------------
    case("exclude-unknown-axis", Bad(BASE + "exclude:\n  - {rw: randread, bss: 4k}\n", 9, "exclude[0].bss",
                                     ("'bss' is not a sweep parameter", "did you mean 'bs'?"))),
    case("exclude-value-never-occurs", Bad(BASE + "exclude:\n  - {rw: randread, bs: 8k}\n", 9, "exclude[0].bs",
                                           ("8k never occurs in the sweep of 'bs'", "values in the plan: 4k"))),
    case("exclude-value-never-occurs-second-rule", Bad(
        BASE + "exclude:\n  - {rw: randread}\n  - rw: randwrite\n", 10, "exclude[1].rw",
        ("never occurs in the sweep of 'rw'",))),
    case("exclude-removes-everything", Bad(BASE + "exclude:\n  - {rw: randread}\n", 8, "exclude",
                                           ("the exclude rules remove every case",))),
    case("exclude-removes-everything-run", Bad(BASE.replace("bs: 4k", "bs: [4k, 8k]")
                                               + "exclude:\n  - {bs: 4k}\n  - {bs: 8k}\n", 8, "exclude",
                                               ("remove every case",), command="run")),
    case("exclude-empty-rule", Bad(BASE + "exclude:\n  - {}\n", 9, "exclude[0]", ("empty exclude rule",))),
    case("exclude-bad-size", Bad(BASE + "exclude:\n  - {bs: banana}\n", 9, "exclude[0].bs",
                                 ("not a size: 'banana'",))),
    # ---- problems found by these tests in src: see the reasons -------------------------------------
    case("block-write-without-destructive", Bad(_plan("""\
        name: bad
        targets:
          dev: {kind: block, device: /dev/loop0}
        workload:
          rw: randwrite
        """), 3, "targets.dev", ("destructive: true",)), marks=needs_fio),
    case("precondition-on-a-raw-device-without-destructive", Bad(_plan("""\
        name: bad
        targets:
          dev:
            kind: block
            device: /dev/loop0
            precondition: {fill: 2x}
        workload:
          rw: randread
        """), 6, "targets.dev.precondition", ("precondition writes fill 2x", "destroying its data",
                                              "destructive: true")), marks=needs_fio),
    case("precondition-fill-and-for", Bad(BASE.replace("size: 1MiB}", "size: 1MiB, precondition: {fill: 2x, "
                                                       "for: 1m}}"), 3, "targets.scratch.precondition",
                                          ("set either fill",))),
    case("precondition-read-workload", Bad(BASE.replace("size: 1MiB}", "size: 1MiB, precondition: {workload: "
                                                        "randread 4k, for: 1m}}"), 3,
                                           "targets.scratch.precondition", ("must be like 'randwrite 4k'",))),
    case("target-name-bad-characters", Bad(_plan("""\
        name: bad
        targets:
          'my disk!': {kind: path, path: ./data, size: 1MiB}
        workload:
          rw: read
        """), 3, "targets.my disk!", ("'my disk!'",))),
    case("fio-value-is-a-mapping", Bad(BASE + "  fio:\n    verify: {a: 1}\n", 9, "workload.fio.verify",
                                       absent=(".str",))),
    case("yaml-unknown-tag-line", Bad(BASE + "evil: !!python/object/apply:os.system [true]\n", 8, None,
                                      ("YAML error",))),
    case("workload-size-zero", Bad(BASE + "  size: 0\n", 8, "workload.size", ())),
    case("target-size-below-bs", Bad(BASE.replace("bs: 4k", "bs: 1m").replace("size: 1MiB", "size: 4k"), 3,
                                     "targets.scratch.size", ())),
    # ---- telemetry ---------------------------------------------------------------------------------
    case("telemetry-unknown-key", Bad(BASE + "telemetry:\n  intervall: 1s\n", 9, "telemetry.intervall",
                                      ("did you mean 'interval'?",))),
    case("telemetry-interval-too-short", Bad(BASE + "telemetry: {interval: 10ms}\n", 8, "telemetry.interval",
                                             ("between 0.2s and 60s",))),
    case("telemetry-process-name-with-slash", Bad(BASE + "telemetry:\n  processes: [fio, /bin/sh]\n", 9,
                                                  "telemetry.processes", ("'/bin/sh'", "/proc/PID/comm"))),
    case("telemetry-pid-zero", Bad(BASE + "telemetry: {pids: [0]}\n", 8, "telemetry.pids[0]",
                                   ("greater than or equal to 1",))),
    case("prometheus-url-with-query", Bad(BASE + "telemetry:\n  prometheus: {url: 'http://p:9090/?x=1&y'}\n",
                                          9, "telemetry.prometheus.url", ("http(s)://host[:port][/path]",))),
    case("prometheus-url-scheme", Bad(BASE + "telemetry:\n  prometheus: {url: 'file:///etc/passwd'}\n", 9,
                                      "telemetry.prometheus.url", ("http(s)://",))),
    case("prometheus-query-name", Bad(BASE + "telemetry:\n  prometheus:\n    url: http://p:9090\n"
                                      "    queries: {'Bad Name': up}\n", 11, "telemetry.prometheus.queries",
                                      ("'Bad Name'",))),
    case("prometheus-missing-url", Bad(BASE + "telemetry:\n  prometheus: {step: 1s}\n", 9,
                                       "telemetry.prometheus.url", ())),
    # ---- Ceph options: an allow-list, values in their grammar, no option twice, no restart of memstore ---
    case("ceph-option-misspelt", Bad(BASE + "lab:\n  ceph:\n    config: {bluestore_cache_sise: 1GiB}\n", 10,
                                     "lab.ceph.config", ("did you mean 'bluestore_cache_size'?",))),
    case("ceph-option-naming-a-path", Bad(BASE + "lab:\n  ceph:\n    config: {admin_socket: /etc/x}\n", 10,
                                          "lab.ceph.config", ("admin_socket is not an OSD option storbench sets",),
                                          absent=("/etc/x",))),
    case("ceph-option-bad-choice", Bad(BASE + "lab:\n  ceph:\n    config: {osd_op_queue: [wpq, 'a;b']}\n", 10,
                                       "lab.ceph.config", ("takes one of wpq, mclock_scheduler",))),
    case("ceph-option-with-own-key", Bad(BASE + "lab:\n  ceph:\n    config: {osd_memory_target: 2GiB}\n", 10,
                                         "lab.ceph.config", ("lab.ceph.osd_memory_target",))),
    case("ceph-cache-twice", Bad(BASE + "lab:\n  ceph:\n    cache_size: 1GiB\n"
                                 "    config: {bluestore_cache_size: 2GiB}\n", 11,
                                 "lab.ceph.config.bluestore_cache_size", ("sets the BlueStore cache twice",))),
    case("ceph-too-many-clusters-side-by-side", Bad(BASE + "lab:\n  ceph:\n    osds: [1, 2, 3]\n"
                                                    "    objectstore: [bluestore, memstore]\n    pool_size: 1\n"
                                                    "    bring_up: side_by_side\n", 13, "lab.ceph.bring_up",
                                                    ("6 Ceph clusters at once, at most 4",))),
    case("ceph-side-by-side-with-hosts", Bad(BASE + "lab:\n  hosts: {count: 1}\n  ceph:\n    osds: [1, 2]\n"
                                             "    pool_size: 1\n    bring_up: side_by_side\n", 13,
                                             "lab.ceph.bring_up", ("hosts lab",))),
    case("ceph-osd-cpus-above-the-machine", Bad(BASE + "lab:\n  ceph:\n    osd_cpus: [1, 4096]\n", 10,
                                                "lab.ceph.osd_cpus[1]", ("less than or equal to 256",))),
    case("ceph-osds-per-device-too-many", Bad(BASE + "lab:\n  ceph:\n    pool_size: 1\n    device_size: 2GiB\n"
                                              "    osds_per_device: [1, 4]\n", 12, "lab.ceph.osds_per_device",
                                              ("4 OSDs on a device of 2GiB leaves under 1 GiB each",))),
    case("ceph-osds-per-device-and-osds", Bad(BASE + "lab:\n  ceph:\n    osds: 3\n    osds_per_device: [1, 2]\n",
                                              11, "lab.ceph.osds_per_device", ("follow from devices",))),
    case("ceph-osd-cpuset-grammar", Bad(BASE + "lab:\n  ceph:\n    osd_cpuset: ['0;rm']\n", 10,
                                        "lab.ceph.osd_cpuset[0]", ("should match pattern",))),
    case("ceph-hosts-fewer-than-the-pool-size", Bad(BASE + "lab:\n  ceph:\n    hosts: 2\n", 10, "lab.ceph.hosts",
                                                   ("a pool of size 3 keeps its copies on as many hosts",
                                                    "raise hosts or lower pool_size"))),
    case("ceph-hosts-more-than-osds", Bad(BASE + "lab:\n  ceph:\n    osds: 2\n    pool_size: 2\n    hosts: 3\n", 12,
                                         "lab.ceph.hosts", ("3 hosts need at least as many OSDs",))),
    case("fault-on-a-host-the-lab-lacks", Bad(BASE + "lab:\n  ceph: {osds: 2, pool_size: 2}\nfaults:\n"
                                             "  - {at: 0.5s, do: kill, on: host.1}\n", 11, "faults[0].on",
                                             ("acts on host.1, and the Ceph lab has no emulated hosts",
                                              "set lab.ceph.hosts"))),
    case("ceph-live-sweep-on-memstore", Bad(BASE + "lab:\n  ceph:\n    objectstore: memstore\n"
                                            "    config: {osd_op_num_shards: [1, 2]}\n", 11,
                                            "lab.ceph.config.osd_op_num_shards",
                                            ("memstore OSD loses its data", "objectstore: bluestore"))),
]


def _one_error_line(status: int, out: str, err: str) -> str:
    assert "Traceback" not in out + err
    assert status == 2, f"exit status {status}, stderr: {err!r}"
    assert out == "", "nothing may be printed on standard output for a bad plan"
    lines = err.splitlines()
    assert len(lines) == 1, f"expected one line on stderr, got {lines!r}"
    assert err == lines[0] + "\n"
    line = lines[0]
    assert line.startswith("storbench: error: ")
    return line


def _assert_nothing_ran(db: Path) -> None:
    """No results database, or one without any run or repetition: never a half-run."""
    if not db.exists():
        return
    with closing(sqlite3.connect(f"file:{db}?mode=ro", uri=True)) as conn:
        runs = conn.execute("SELECT count(*) FROM runs").fetchone()[0]
        repetitions = conn.execute("SELECT count(*) FROM repetitions").fetchone()[0]
    assert (runs, repetitions) == (0, 0)


@pytest.fixture(autouse=True)
def _isolated(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("STORBENCH_FIO", raising=False)
    monkeypatch.delenv("STORBENCH_DB", raising=False)


def _argv(command: str, path: Path, db: Path) -> list[str]:
    return ["plan", str(path)] if command == "plan" else ["run", str(path), "--db", str(db)]


@pytest.mark.parametrize("bad", BAD_PLANS)
def test_bad_plan(bad: Bad, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / PLAN_NAME
    path.write_text(bad.text)
    db = tmp_path / "r.db"

    status = main(_argv(bad.command, path, db))

    out, err = capsys.readouterr()
    line = _one_error_line(status, out, err)
    where = f"storbench: error: {path}:{bad.line}: " + (f"{bad.key}: " if bad.key is not None else "")
    assert line.startswith(where), f"expected the error to start with {where!r}, got {line!r}"
    for text in bad.says:
        assert text in line
    if bad.key is not None and "." in bad.key:  # a dotted key is said once, before the message
        assert not line.removeprefix(where).startswith(bad.key), line
    after_path = line.removeprefix(f"storbench: error: {path}")
    for text in bad.absent:
        assert text not in after_path
    _assert_nothing_ran(db)
    assert not (tmp_path / "data").exists(), "a bad plan must not create the target directory"


@pytest.mark.fio
@pytest.mark.skipif(not HAVE_FIO, reason="needs fio on PATH")
def test_base_plan_is_valid(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """The plan the bad ones are derived from is fine, so each failure above comes from its one defect."""
    path = tmp_path / PLAN_NAME
    path.write_text(BASE)
    assert main(["plan", str(path)]) == 0
    out, err = capsys.readouterr()
    assert err == ""
    assert "1 case x 3 repetitions" in out


@pytest.mark.parametrize("command", ["plan", "run"])
def test_plan_file_does_not_exist(command: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "no-such-plan.yaml"
    db = tmp_path / "r.db"

    status = main(_argv(command, path, db))

    out, err = capsys.readouterr()
    line = _one_error_line(status, out, err)
    assert str(path) in line
    assert "does not exist" in line
    assert not db.exists()


@pytest.mark.parametrize("command", ["plan", "run"])
@pytest.mark.parametrize("rw", ["randwrite", "write", "randrw", "trim"])
@pytest.mark.fio
@pytest.mark.skipif(not HAVE_FIO, reason="needs fio on PATH")
def test_block_write_refused_without_destructive(
    command: str, rw: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Writing (or trimming) a raw device needs ``destructive: true``; a device that is not there (or is in use)
    is told so first, so the hint about ``destructive`` is never followed by a refusal it could not lift."""
    for device in ("/dev/loop0", "/dev/storbench-no-such-device"):
        path = tmp_path / PLAN_NAME
        path.write_text(f"name: bad\ntargets:\n  dev: {{kind: block, device: {device}}}\nworkload:\n  rw: {rw}\n")
        db = tmp_path / "r.db"

        status = main(_argv(command, path, db))

        out, err = capsys.readouterr()
        line = _one_error_line(status, out, err)
        if device == "/dev/loop0":
            assert f"would {rw} on raw device {device} of target 'dev'" in line
            assert "hint: add 'destructive: true' to target 'dev'" in line
        else:
            assert f"cannot stat {device}" in line and "destructive" not in line
        assert not db.exists()


def test_target_name_bad_characters_is_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / PLAN_NAME
    path.write_text("name: bad\ntargets:\n  'my disk!': {kind: path, path: ./data, size: 1MiB}\n"
                    "workload:\n  rw: read\n")

    status = main(["plan", str(path)])

    line = _one_error_line(status, *capsys.readouterr())
    assert line.startswith(f"storbench: error: {path}:")
    assert "target name 'my disk!' must be letters, digits" in line


def test_target_directory_with_quote_fails_before_the_run(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    workdir = tmp_path / "o'brien"
    workdir.mkdir()
    monkeypatch.chdir(workdir)
    path = workdir / PLAN_NAME
    path.write_text(BASE.replace("bs: 4k", "bs: 4k\n  ioengine: psync\n  direct: false") + "repeat: 1\n")
    db = tmp_path / "r.db"

    status = main(["run", str(path), "--db", str(db)])  # today: ValueError from render_job

    out, err = capsys.readouterr()
    assert "Traceback" not in out + err
    if status == 2:  # refused up front, as one line, before any run is recorded
        _one_error_line(status, out, err)
        _assert_nothing_ran(db)
    else:  # or the directory is written safely and the run works
        assert status == 0, err


@pytest.mark.fio
@pytest.mark.skipif(not HAVE_FIO, reason="needs fio on PATH")
def test_an_osd_cpu_quota_above_this_machine_is_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    cores = os.cpu_count() or 1
    path = tmp_path / PLAN_NAME
    path.write_text(BASE.replace("scratch: {kind: path, path: ./data, size: 1MiB}",
                                 "rbd: {kind: rbd, pool: bench, image: x, size: 16MiB}")
                    + f"lab:\n  ceph:\n    osd_cpus: [1, {cores + 1}]\n")
    status = main(["plan", str(path)])
    _, err = capsys.readouterr()
    assert status == 2 and f"osd_cpus {cores + 1} is more than this machine's {cores} cores" in err
    assert f"{path}:10: lab.ceph.osd_cpus" in err


def test_a_fast_db_device_needs_bluestore(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / PLAN_NAME
    path.write_text(BASE + "lab:\n  ceph:\n    objectstore: memstore\n    db_device: [none, fast]\n")
    status = main(["plan", str(path)])
    _, err = capsys.readouterr()
    assert status == 2 and "a memstore OSD has none" in err and f"{path}:11: lab.ceph.db_device" in err
