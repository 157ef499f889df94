"""Secrets kept out of everything storbench stores or prints (pure).

fio echoes its options in its output after expanding ``${VAR}`` ("global options" and job options in JSON, the
option in a parse error), so a key that reached fio through its environment comes back in fio's raw output.
Before an outcome is stored or shown, the value of every option whose name says it is a secret is replaced, and
so is every known secret value wherever it appears."""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import replace

from storbench.fio.jobfile import S3_KEY_ENV, S3_KEY_ID_ENV
from storbench.model import RepetitionOutcome

HIDDEN = "<hidden>"
MIN_SECRET_CHARS = 4  # shorter values are not searched for (they would hide ordinary text)
# Option names that hold a secret: http_s3_key, http_s3_keyid, http_pass, http_s3_sse_customer_key, tokens ...
_SECRET_NAME = r"[A-Za-z0-9_]*(?:key|pass|passwd|password|secret|token|credential)[A-Za-z0-9_]*"
_JSON_PAIR = re.compile(r'("' + _SECRET_NAME + r'"\s*:\s*)"(?:[^"\\]|\\.)*"', re.IGNORECASE)
# an option as a job file, a command line or fio's messages write it: at a line's start or after a space, "--", a
# comma, ";", "(", "<" (fio's "Bad option <name=value>"), a quote, ":" or "=", never after "/" inside a path
# (/mnt/partition=1/passes=3 is a directory's name, kept as written)
_OPTION_PAIR = re.compile(r"((?:^|(?<=[\s,;(<\"':=-]))" + _SECRET_NAME + r"\s*=\s*)[^\s<>\"']+",
                          re.IGNORECASE | re.MULTILINE)


SECRET_ENV = (S3_KEY_ID_ENV, S3_KEY_ENV)  # what of a binding's environment is a secret


def env_secrets(env: Sequence[tuple[str, str]]) -> tuple[str, ...]:
    """The secret values of a binding's environment for fio (the S3 keys; not CEPH_CONF's path)."""
    return tuple(value for name, value in env if name in SECRET_ENV)


# Variables that may hold a credential, by name: AWS_*, MinIO's MC_HOST_* (a URL with its keys), anything named like
# a secret, token, password (PASS, PASSWD), credential, key or API key, a personal access token (GITHUB_PAT)
_SECRET_VARIABLE = re.compile(r"AWS_.*|MC_HOST_.*|.*(?:SECRET|TOKEN|PASS|CREDENTIAL|APIKEY).*|.*_KEY(?:_ID)?|.*_PAT",
                              re.IGNORECASE)
_URL_WITH_CREDENTIALS = re.compile(r"[A-Za-z][A-Za-z0-9+.-]*://[^/@\s]+:[^/@\s]*@")  # https_proxy=http://u:p@host


def without_secrets(environ: Mapping[str, str]) -> dict[str, str]:
    """The environment every program storbench starts runs with (fio, lab daemons, tools): storbench's, less every
    variable that may hold a credential (named like one, or a URL with a user and password in it, as a proxy's may
    be); what fio needs for a target is added back by name."""
    return {name: value for name, value in environ.items()
            if not _SECRET_VARIABLE.fullmatch(name) and not _URL_WITH_CREDENTIALS.search(value)}


def is_secret_option(name: str) -> bool:
    return re.fullmatch(_SECRET_NAME, name, re.IGNORECASE) is not None


def redact_text(text: str, secrets: Iterable[str] = ()) -> str:
    """``text`` with every secret option's value and every given secret value (as written, and as JSON escapes
    it) replaced by <hidden>."""
    for secret in sorted({s for s in secrets if len(s) >= MIN_SECRET_CHARS}, key=len, reverse=True):
        escaped = json.dumps(secret)[1:-1]
        for form in {secret, escaped, escaped.replace("/", "\\/")}:
            text = text.replace(form, HIDDEN)
    text = _JSON_PAIR.sub(lambda m: f'{m.group(1)}"{HIDDEN}"', text)
    return _OPTION_PAIR.sub(lambda m: f"{m.group(1)}{HIDDEN}" if "${" not in m.group(0) else m.group(0), text)


def redact_outcome(outcome: RepetitionOutcome, secrets: Iterable[str] = ()) -> RepetitionOutcome:
    """The outcome with no secret in its raw output, stderr, error, job text or command."""
    values = tuple(secrets)
    return replace(outcome, raw_output=redact_text(outcome.raw_output, values),
                   stderr_tail=redact_text(outcome.stderr_tail, values), error=redact_text(outcome.error, values),
                   job_text=redact_text(outcome.job_text, values),
                   command=tuple(redact_text(part, values) for part in outcome.command))
